import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { TASK_QUEUES } from '../workflowClients/registry';

/**
 * The house's rules, read from the code itself (README.md, "Architecture"): layers point down, no
 * file imports itself round a circle, task queue names are written in workflowClients/registry.ts alone,
 * and SQL is written in db/ alone. Tests and the bench are outside the house.
 */
const ROOT = path.join(__dirname, '..');

/** The layers from the ground up: a folder imports only its own and the ones before it. */
const LAYERS = ['domain', 'infra', 'contract', 'db', 'storage', 'callers', 'workflowClients', 'planning', 'activities', 'workflows', 'runs', 'admin', 'workers', 'api'];
function sources(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir)).flatMap((name) => {
    const rel = path.join(dir, name);
    if (statSync(path.join(ROOT, rel)).isDirectory()) return sources(rel);
    return rel.endsWith('.ts') && !rel.endsWith('.d.ts') ? [rel] : [];
  });
}

const files = LAYERS.flatMap(sources);
const known = new Set(files);
const IMPORT = /(?:from|import|require)\s*\(?\s*['"](\.{1,2}\/[^'"]*)['"]/g;

/** The house's files each file imports (relative imports that name one of them). */
const imports = new Map(
  files.map((file) => {
    const text = readFileSync(path.join(ROOT, file), 'utf8');
    const targets = [...text.matchAll(IMPORT)].flatMap(([, spec]) => {
      const base = path.normalize(path.join(path.dirname(file), spec));
      return [`${base}.ts`, path.join(base, 'index.ts')].filter((candidate) => known.has(candidate)).slice(0, 1);
    });
    return [file, targets];
  }),
);
const layerOf = (file: string) => LAYERS.indexOf(file.split(path.sep)[0]);

describe('the house', () => {
  it('has every layer the rule names (a folder renamed is a rule to renew)', () => {
    expect(files.length).toBeGreaterThan(200);
    for (const layer of LAYERS) expect(files.some((f) => f.startsWith(`${layer}/`))).toBe(true);
  });

  it('imports only down its layers', () => {
    const up = [...imports].flatMap(([from, targets]) => targets.filter((to) => layerOf(to) > layerOf(from)).map((to) => `${from} -> ${to}`));
    expect(up).toEqual([]);
  });

  it('has no circle of imports', () => {
    const state = new Map<string, 'open' | 'done'>();
    const circles: string[] = [];
    const visit = (file: string, trail: string[]) => {
      if (state.get(file) === 'done') return;
      if (state.get(file) === 'open') return void circles.push([...trail.slice(trail.indexOf(file)), file].join(' -> '));
      state.set(file, 'open');
      for (const to of imports.get(file) ?? []) visit(to, [...trail, file]);
      state.set(file, 'done');
    };
    for (const file of files) visit(file, []);
    expect(circles).toEqual([]);
  });

  it('names task queues in workflowClients/registry.ts alone', () => {
    // A queue's name as code says it (a string, not a comment's backquotes); `background` is a /v1 parameter too.
    const quoted = new RegExp(`(['"]agent-runs['"])|((queue|Queue|queues)\\b[^\\n]{0,40}['"](${TASK_QUEUES.join('|')})['"])`);
    const writers = files.filter((f) => f !== path.join('workflowClients', 'registry.ts') && quoted.test(readFileSync(path.join(ROOT, f), 'utf8')));
    expect(writers).toEqual([]);
  });

  it('writes SQL in db/ alone', () => {
    const sql = /['"`][^'"`]*\b(SELECT\s[^'"`]*\sFROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM)\b/;
    const writers = files.filter((f) => !f.startsWith(`db${path.sep}`) && sql.test(readFileSync(path.join(ROOT, f), 'utf8')));
    expect(writers).toEqual([]);
  });
});
