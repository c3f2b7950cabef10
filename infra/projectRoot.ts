import { existsSync } from 'node:fs';
import path from 'node:path';

/** The project root, whether this runs from source (infra/) or compiled (dist/infra/). */
export const PROJECT_ROOT = (() => {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${__dirname}`);
  }
})();
