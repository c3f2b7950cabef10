import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { WORKER_SHUTDOWN_GRACE_MS } from '../workflows/timings';

/** docker-compose v1 validates and normalises the file without an engine; `workers/setup.sh --test` installs it. */
function composeConfig(): string {
  try {
    return execFileSync('docker-compose', ['-f', path.join(__dirname, '..', 'docker-compose.yml'), 'config'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') throw new Error('docker-compose is not installed: run `bash workers/setup.sh --test`');
    throw err;
  }
}

/** The top-level blocks of one service in the normalised YAML (two-space indented under `services:`). */
function service(config: string, name: string): string {
  const match = new RegExp(`\\n  ${name}:\\n((?:    .*\\n|\\n)*)`).exec(config);
  if (!match) throw new Error(`service ${name} missing from docker-compose config`);
  return match[1];
}

describe('docker-compose.yml', () => {
  const config = composeConfig();

  it('declares the whole stack', () => {
    for (const name of ['postgres', 'redis', 'temporal', 'temporal-ui', 'api', 'worker']) expect(service(config, name)).toBeTruthy();
  });

  it('lets the worker scale: no container name, no host port', () => {
    const worker = service(config, 'worker');
    expect(worker).not.toMatch(/container_name:/);
    expect(worker).not.toMatch(/\n    ports:/);
  });

  it('configures api and worker with the operator contract’s variables', () => {
    for (const name of ['api', 'worker']) {
      const env = service(config, name);
      for (const variable of ['DATABASE_URL', 'REDIS_URL', 'TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'MODEL_PROVIDER', 'SIGNING_SECRET']) {
        expect(env).toContain(`${variable}:`);
      }
    }
    expect(service(config, 'api')).toMatch(/published: 8080|8080:8080/);
  });

  it('installs with npm ci and lets SIGTERM reach the processes for as long as they drain', () => {
    const seconds = (block: string) => Number(/stop_grace_period: (\d+)s/.exec(block)?.[1]);
    const api = service(config, 'api');
    const worker = service(config, 'worker');
    expect(api).toContain('npm ci');
    const starts = (block: string, script: string) => block.replace(/\s+/g, ' ').includes(`exec $$(node -p "require('./package.json').scripts['${script}']")`);
    expect(starts(api, 'start:api')).toBe(true);
    expect(starts(worker, 'start:worker')).toBe(true);
    expect(seconds(worker)).toBeGreaterThanOrEqual(WORKER_SHUTDOWN_GRACE_MS / 1000);
    expect(seconds(api)).toBeGreaterThanOrEqual(35);
  });
});
