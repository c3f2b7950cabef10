import { randomBytes } from 'node:crypto';
import { startModelServer } from '../../workers/modelServer';
import { freePort, startDevServer } from '../../workers/temporalDevServer';
import { StubProvider } from './stubProvider';
import { startS3Server } from './s3Server';
import type { StackHandles } from './globalTeardown';

const SPARE_NAMESPACES = ['aes-blue', 'aes-green', 'aes-rekey', 'aes-outage', 'aes-resume', 'aes-embedded'];

/**
 * The real stack for the whole test run: an in-memory Temporal dev server, a fresh PostgreSQL
 * database with every migration, the stub provider, the real model server (reached through the
 * stub: test/realModel.test.ts), and one worker polling every task queue.
 * Test files inherit the environment set here and start their own in-process API.
 */
export default async function globalSetup(): Promise<void> {
  // Namespaces of their own for tests of deployments beside the stack's (test/deliveryNamespaces.test.ts).
  const [temporal, s3, model] = await Promise.all([startDevServer(SPARE_NAMESPACES), startS3Server(), startModelServer()]);
  const stub = new StubProvider(model.url, model.apiKey);
  const stubUrl = await stub.start();
  const database = `aes_test_${randomBytes(4).toString('hex')}`;
  Object.assign(process.env, {
    TEMPORAL_ADDRESS: temporal.address,
    DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${database}`,
    MODEL_PROVIDER: 'openai',
    MODEL_BASE_URL: `${stubUrl}/v1`,
    MODEL_API_KEY: 'stub-key',
    STUB_URL: stubUrl,
    TEST_MODEL_SERVER_URL: model.url,
    TEST_MODEL_SERVER_KEY: model.apiKey,
    // Tool endpoints and webhook receivers in tests listen on loopback.
    WEBHOOK_ALLOW_PRIVATE_TARGETS: '1',
    // Webhook retries after 0.5, 1 and 1.5 s instead of 60 s, 5 min and 30 min; an endpoint failing
    // every attempt for 4 s is disabled (production: 5 days).
    WEBHOOK_RETRY_DELAYS_MS: '500,1000,1500',
    WEBHOOK_DISABLE_AFTER_S: '4',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'error',
    // Every test file's API calls from 127.0.0.1 and shares the Redis counters: the failed-authentication
    // limit is off, except in the file that tests it (on addresses of its own).
    AUTH_FAILURE_LIMIT: '0',
    // Test files play clients at many addresses through X-Forwarded-For, as if behind one proxy;
    // test/clientAddress.test.ts checks the default (no proxy: the header is ignored).
    TRUST_PROXY_HOPS: '1',
    TEST_SPARE_NAMESPACES: SPARE_NAMESPACES.join(','),
    // Development secrets and open metrics, as `npm start` (test/startupSecrets.test.ts checks the refusals without it).
    DEVELOPMENT_MODE: '1',
    // A parse bomb (test/parserBombs.test.ts) burns 4 s of CPU before it is stopped, not 60; a real
    // document of the suite's parses in well under one.
    PARSE_CPU_S: '4',
    // More parse slots than that file's three bombs, so other files' documents never queue behind them.
    PARSE_CONCURRENCY: '4',
  });
  // Imported only now, so the modules read the environment above.
  const { migrate } = await import('../../db/migrate');
  await migrate();
  const { startWorkers } = await import('../../workers/worker');
  // This worker serves its metrics on a port of its own; test files (which start workers of their
  // own) do not inherit the variable, only where to scrape.
  const metricsPort = await freePort();
  process.env.WORKER_METRICS_PORT = String(metricsPort);
  (await import('../../infra/config')).resetConfig();
  const workers = await startWorkers(['agent-runs', 'background', 'webhooks']);
  delete process.env.WORKER_METRICS_PORT;
  process.env.TEST_WORKER_METRICS_URL = `http://127.0.0.1:${metricsPort}/metrics`;
  const handles: StackHandles = { temporal: temporal.process, s3, model: model.process, stub, workers, database };
  (globalThis as { __stack?: StackHandles }).__stack = handles;
}
