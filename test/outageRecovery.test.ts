import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { dataConverter } from '../infra/payloadCodec';
import { freePort } from '../workers/temporalDevServer';
import { DISPATCHER_SCHEDULE_ID } from '../workflowClients/outboxDispatcher.client';
import { closeAll, until } from './support/stack';
import { childWorker, type Child } from './support/childProcesses';
import { tcpProxy, type TcpProxy } from './support/tcpProxy';
import { WebhookReceiver } from './support/webhookReceiver';
import { ownDatabase, type OwnDatabase } from './support/ownDatabase';

/**
 * What is not a run resumes by itself after a PostgreSQL outage too: the outbox dispatcher and the
 * partner's webhook deliveries, with no event lost or sent twice. A deployment of its own (a Temporal
 * namespace, a database no other test touches) whose worker reaches its database through a proxy the
 * test cuts; the partner's events are written straight to the database meanwhile, as the API's of
 * another instance would be.
 */
const execFileAsync = promisify(execFile);
const DIST = path.join(__dirname, '../dist');
const NAMESPACE = process.env.TEST_SPARE_NAMESPACES!.split(',')[4];
const receiver = new WebhookReceiver();
let proxy: TcpProxy;
let worker: Child | undefined;
let database: OwnDatabase;
let databaseUrl: string;
let pg: OwnDatabase['pg'];

async function fixture(args: string[], env: Record<string, string> = {}): Promise<any> {
  const { stdout } = await execFileAsync(process.execPath, [path.join(DIST, 'test/stack/deliveryFixture.js'), ...args], { env: { ...process.env, DATABASE_URL: databaseUrl, ...env } });
  return JSON.parse(stdout);
}

beforeAll(async () => {
  await receiver.start();
  database = await ownDatabase('aes_resume');
  ({ url: databaseUrl, pg } = database);
  proxy = await tcpProxy({ host: '127.0.0.1', port: 5432 });
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  await proxy?.close();
  await database?.drop();
  await receiver.stop();
  await closeAll();
});

/** A counter the worker serves on its metrics port (the Temporal runtime's Prometheus exposition), summed over its labels. */
async function counter(url: string, name: string): Promise<number> {
  const text = await (await fetch(url)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
}

it('delivers every event exactly once after the outage, an attempt sent during it included, and the dispatcher keeps firing', async () => {
  const metricsPort = await freePort();
  const metrics = `http://127.0.0.1:${metricsPort}/metrics`;
  worker = await childWorker('webhooks', { DATABASE_URL: proxy.through(databaseUrl), TEMPORAL_NAMESPACE: NAMESPACE, WORKER_METRICS_PORT: String(metricsPort) });
  const { partner, merchant } = await fixture(['partner', `${receiver.url}/hooks`]);

  // The first event's POST is held by the receiver until the database is gone: its attempt is then
  // recorded only after the outage, and must not be sent again.
  receiver.script('/hooks', ['hold', { status: 200 }]);
  await fixture(['emit', partner, JSON.stringify(merchant), '1']);
  await until(async () => (receiver.at('/hooks').length === 1 ? true : undefined), 'the first attempt to reach the receiver');
  await proxy.cut();
  receiver.release('/hooks', { status: 200 });
  // The attempt met the outage recording what it sent, and waits.
  await until(async () => ((await counter(metrics, 'aes_dependency_retries_total')) > 0 ? true : undefined), 'the attempt to wait for the database');
  // Events written meanwhile (by another instance, say) wait in the outbox.
  await fixture(['emit', partner, JSON.stringify(merchant), '2']);
  await proxy.restore();

  const rows = await until(async () => {
    const { rows } = await pg.query<{ status: string; attempts: number }>('SELECT d.status, d.attempts FROM webhook_deliveries d JOIN partners p ON p.id = d.partner_id WHERE p.public_id = $1', [partner]);
    return rows.length === 3 && rows.every((d) => d.status !== 'pending') ? rows : undefined;
  }, 'three settled deliveries', 90);
  expect(rows.map((d) => d.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
  expect(rows.map((d) => d.attempts)).toEqual([1, 1, 1]);
  const received = receiver.at('/hooks');
  expect(received).toHaveLength(3);
  expect(new Set(received.map((r) => r.headers['webhook-id'])).size).toBe(3);

  // The dispatcher's Schedule is not paused by the failures it met, and fires again.
  const client = new Client({ connection: await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! }), namespace: NAMESPACE, dataConverter });
  try {
    const schedule = await client.schedule.getHandle(DISPATCHER_SCHEDULE_ID).describe();
    expect(schedule.state.paused).toBe(false);
    expect(schedule.info.nextActionTimes.length).toBeGreaterThan(0);
  } finally {
    await client.connection.close();
  }
});

it('a key ring changed to keys it never held delivers, once a worker with the new key first has re-sealed the secrets at rest; a secret left behind is loud', async () => {
  await worker?.stop();
  const key = (id: string) => `${id}:${randomBytes(32).toString('base64')}`;
  const [a, c] = [key('a'), key('c')];
  const deployment = (ring: string) => childWorker('webhooks', { DATABASE_URL: databaseUrl, TEMPORAL_NAMESPACE: NAMESPACE, PAYLOAD_ENCRYPTION_KEYS: ring });
  const delivered = (path: string, n: number) => until(async () => (receiver.at(path).length === n ? true : undefined), `${n} deliveries to ${path}`, 90);

  // Ring a: the endpoint's secret is sealed with a, and its event delivered.
  worker = await deployment(a);
  const { partner, merchant } = await fixture(['partner', `${receiver.url}/ring`], { PAYLOAD_ENCRYPTION_KEYS: a });
  await fixture(['emit', partner, JSON.stringify(merchant), '1'], { PAYLOAD_ENCRYPTION_KEYS: a });
  await delivered('/ring', 1);
  await worker.stop();

  // Ring c,a: c is active, and the worker re-seals what a sealed.
  worker = await deployment(`${c},${a}`);
  await worker.logged('webhook endpoint secrets re-sealed under the active payload key');
  // Sealed with a after that (by an instance still on ring a): left behind.
  const late = await fixture(['partner', `${receiver.url}/late`], { PAYLOAD_ENCRYPTION_KEYS: a });
  await worker.stop();

  // Ring c alone: the re-sealed endpoint delivers; the one left behind says why it cannot.
  worker = await deployment(c);
  await fixture(['emit', partner, JSON.stringify(merchant), '1'], { PAYLOAD_ENCRYPTION_KEYS: c });
  await delivered('/ring', 2);
  await fixture(['emit', late.partner, JSON.stringify(late.merchant), '1'], { PAYLOAD_ENCRYPTION_KEYS: c });
  await worker.logged('webhook endpoint secrets cannot be opened with PAYLOAD_ENCRYPTION_KEYS: their deliveries cannot be signed until the key that sealed them is back in the ring (after the active one), or their secrets are rotated');
  expect(receiver.at('/late')).toEqual([]);
});
