import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client as Pg } from 'pg';
import { Client, Connection } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal as proto } from '@temporalio/proto';
import { redis } from '../infra/redis';
import { activeKeyFingerprint, open, parseKeyRing } from '../infra/encryption';
import { unopenableMark } from '../infra/unopenablePayloads';
import { freePort } from '../workers/temporalDevServer';
import { DISPATCHER_SCHEDULE_ID } from '../workflowClients/outboxDispatcher.client';
import { RECONCILE_SCHEDULE_ID } from '../workflowClients/reconcileRuns.client';
import { closeAll } from './support/stack';
import { WebhookReceiver } from './support/webhookReceiver';

/**
 * Deployments beside the stack's: workers in Temporal namespaces of their own (test/stack/globalSetup.ts
 * makes them), on a database of their own that no other test file touches, as a blue/green move or a
 * key change would have them. Everything here runs as separate processes from the compiled code.
 */

const execFileAsync = promisify(execFile);
const DIST = path.join(__dirname, '../dist');
const [BLUE, GREEN, REKEY] = process.env.TEST_SPARE_NAMESPACES!.split(',');
const database = `aes_ns_${randomBytes(4).toString('hex')}`;
const databaseUrl = `postgres://postgres@127.0.0.1:5432/${database}`;
const receiver = new WebhookReceiver();
const children: ChildProcess[] = [];
let pg: Pg;

/** Polls until the probe yields a value. Bounded only so that a broken feature fails instead of hanging: processes start here, on a loaded machine too. */
async function until<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
  for (const deadline = Date.now() + 90_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    const value = await probe();
    if (value !== undefined) return value;
  }
  throw new Error(`gave up waiting for ${what}`);
}

const envWith = (extra: Record<string, string> = {}) => ({ ...process.env, DATABASE_URL: databaseUrl, ...extra });

async function fixture(args: string[], extra: Record<string, string> = {}): Promise<any> {
  const { stdout } = await execFileAsync(process.execPath, [path.join(DIST, 'test/stack/deliveryFixture.js'), ...args], { env: envWith(extra) });
  return JSON.parse(stdout);
}

/** A webhooks worker of another deployment; its log (stderr) is kept. */
function startWorker(namespace: string, extra: Record<string, string> = {}, queues = ['webhooks']): { child: ChildProcess; log: () => string } {
  const child = spawn(process.execPath, [path.join(DIST, 'workers/main.js'), '--queues', queues.join(',')], { env: envWith({ TEMPORAL_NAMESPACE: namespace, ...extra }), stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  for (const stream of [child.stdout!, child.stderr!]) stream.on('data', (chunk: Buffer) => (log += chunk.toString()));
  children.push(child);
  return { child, log: () => log };
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    child.kill('SIGKILL');
    await once(child, 'exit');
  }
}

interface Delivery {
  public_id: string;
  status: string;
  attempts: number;
  claimed_by: string | null;
}

const deliveriesOf = async (partner: string) =>
  (await pg.query<Delivery>('SELECT d.public_id, d.status, d.attempts, d.claimed_by FROM webhook_deliveries d JOIN partners p ON p.id = d.partner_id WHERE p.public_id = $1 ORDER BY d.id', [partner])).rows;

/** The partner's deliveries once there are `n` and none is pending. */
const settled = (partner: string, n: number) =>
  until(async () => {
    const rows = await deliveriesOf(partner);
    return rows.length === n && rows.every((d) => d.status !== 'pending') ? rows : undefined;
  }, `${n} settled deliveries of ${partner}`);

beforeAll(async () => {
  await receiver.start();
  const admin = new Pg({ connectionString: process.env.DATABASE_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  await admin.end();
  await execFileAsync(process.execPath, [path.join(DIST, 'db/migrate.js')], { env: envWith() });
  pg = new Pg({ connectionString: databaseUrl });
  await pg.connect();
}, 60_000);

afterAll(async () => {
  await Promise.all(children.map(kill));
  await pg?.end();
  const admin = new Pg({ connectionString: process.env.DATABASE_URL });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  await admin.end();
  await receiver.stop();
  await closeAll();
});

describe('two deployments, each in its own Temporal namespace, on one database', () => {
  it('deliver every event exactly once: a delivery is claimed in the database before its workflow starts', async () => {
    const { partner, merchant } = await fixture(['partner', `${receiver.url}/blue-green`]);
    const [blue, green] = [startWorker(BLUE), startWorker(GREEN)];
    // Events arrive while both dispatchers run, in several commits, so both find unstarted deliveries.
    for (let batch = 0; batch < 6; batch++) await fixture(['emit', partner, JSON.stringify(merchant), '10']);

    const deliveries = await settled(partner, 60);
    expect(deliveries.every((d) => d.status === 'succeeded' && d.attempts === 1)).toBe(true);
    expect(deliveries.every((d) => d.claimed_by === BLUE || d.claimed_by === GREEN)).toBe(true);
    const sent = receiver.at('/blue-green').map((r) => r.headers['x-service-delivery-id']);
    expect(sent.sort()).toEqual(deliveries.map((d) => d.public_id).sort());
    const { rows } = await pg.query<{ n: string }>('SELECT count(*) AS n FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id JOIN partners p ON p.id = d.partner_id WHERE p.public_id = $1', [partner]);
    expect(Number(rows[0].n)).toBe(60);
    await Promise.all([kill(blue.child), kill(green.child)]);

    // One claim per generation: its holder may claim it again (its start is idempotent in its namespace), no one else;
    // a resend's new generation goes to whichever claims it first.
    const [d] = deliveries;
    const claim = (generation: number, namespace: string) => fixture(['claim', d.public_id, String(generation), namespace]);
    expect(await claim(0, d.claimed_by === BLUE ? GREEN : BLUE)).toBe(false);
    await pg.query("UPDATE webhook_deliveries SET status = 'pending', started = false, claimed_by = NULL, generation = 1 WHERE public_id = $1", [d.public_id]);
    expect(await claim(0, BLUE)).toBe(false);
    expect(await claim(1, GREEN)).toBe(true);
    expect(await claim(1, BLUE)).toBe(false);
    expect(await claim(1, GREEN)).toBe(true);
  }, 240_000);
});

describe('a payload key changed and the old one dropped', () => {
  const key = () => randomBytes(32).toString('base64');
  const [first, second] = [`k1:${key()}`, `k2:${key()}`];
  let connection: Connection;
  let temporal: Client;
  beforeAll(async () => {
    connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS });
    // No codec: nothing here opens a payload, and this process does not hold the deployment's keys.
    temporal = new Client({ connection, namespace: REKEY });
  });
  afterAll(() => connection?.close());

  /** Runs the reconciler's Schedule now and waits for that run to complete (a run that cannot open its start never does). */
  async function reconcilerRunCompletes(): Promise<void> {
    const completed = async () => {
      let n = 0;
      for await (const _ of temporal.workflow.list({ query: `TemporalScheduledById = '${RECONCILE_SCHEDULE_ID}' AND ExecutionStatus = 'Completed'` })) n++;
      return n;
    };
    const before = await completed();
    // Described raw: its memo is sealed.
    await until(() => temporal.workflowService.describeSchedule({ namespace: REKEY, scheduleId: RECONCILE_SCHEDULE_ID }).then(() => true, () => undefined), 'the Schedule');
    await temporal.schedule.getHandle(RECONCILE_SCHEDULE_ID).trigger();
    await until(async () => ((await completed()) > before ? true : undefined), 'a run of the reconciler to complete');
  }

  it('a starting worker makes its Schedules anew under the new key, so they run and deliveries flow; a workflow it cannot open is loud', async () => {
    await redis().del(unopenableMark(REKEY));
    const queues = ['webhooks', 'background'];
    // A delivery in flight across the change: its first attempt fails, and its retry comes after it
    // (20 s later: long enough that the old worker is gone by then, however loaded the machine).
    receiver.script('/rekey', [{ status: 500 }, { status: 200 }]);
    const before = startWorker(REKEY, { PAYLOAD_ENCRYPTION_KEYS: `${first},${second}`, WEBHOOK_RETRY_DELAYS_MS: '20000', WEBHOOK_DISABLE_AFTER_S: '3600' }, queues);
    // A completed run leaves its result, sealed with the first key, for the Schedule's next run to start with.
    await reconcilerRunCompletes();
    // The endpoint's secret is sealed at rest with the key that stays, after this worker's start (which
    // re-seals what it finds under its active key); the Schedules with the one that goes.
    const { partner, merchant } = await fixture(['partner', `${receiver.url}/rekey`], { PAYLOAD_ENCRYPTION_KEYS: second });
    const emit = (n: number) => fixture(['emit', partner, JSON.stringify(merchant), String(n)]);
    await emit(1);
    const [stuck] = await until(async () => {
      const rows = await deliveriesOf(partner);
      return rows.length === 1 && rows[0].attempts === 1 ? rows : undefined;
    }, 'the first attempt');
    await kill(before.child);

    const metricsPort = await freePort();
    const restartedAt = Date.now();
    const after = startWorker(REKEY, { PAYLOAD_ENCRYPTION_KEYS: second, WORKER_METRICS_PORT: String(metricsPort), LOG_LEVEL: 'warn', WEBHOOK_DISABLE_AFTER_S: '3600' }, queues);
    await reconcilerRunCompletes();
    await emit(3);
    const deliveries = await until(async () => {
      const rows = await deliveriesOf(partner);
      return rows.length === 4 && rows.filter((d) => d.status === 'succeeded').length === 3 ? rows : undefined;
    }, 'the three events after the change to be delivered');
    expect(deliveries.find((d) => d.public_id === stuck.public_id)!.status).toBe('pending');

    // Each Schedule records the key that sealed it, and no run of the old one is left failing task after task.
    for (const scheduleId of [DISPATCHER_SCHEDULE_ID, RECONCILE_SCHEDULE_ID]) {
      const { memo } = await temporal.workflowService.describeSchedule({ namespace: REKEY, scheduleId });
      const opened = proto.api.common.v1.Payload.decode(open(memo!.fields!.sealedWith.data!, parseKeyRing(second)));
      expect(defaultPayloadConverter.fromPayload(opened)).toBe(activeKeyFingerprint(parseKeyRing(second)));
      for await (const run of temporal.workflow.list({ query: `TemporalScheduledById = '${scheduleId}' AND ExecutionStatus = 'Running'` })) {
        expect(run.startTime.getTime()).toBeGreaterThanOrEqual(restartedAt);
      }
    }

    // The delivery sealed with the dropped key cannot be opened: logged, counted, and the deployment marked not ready.
    await until(async () => ((await redis().get(unopenableMark(REKEY))) ? true : undefined), 'the unopenable payload to be marked');
    expect(after.log()).toContain('cannot be opened with PAYLOAD_ENCRYPTION_KEYS');
    const metrics = await until(async () => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      return /aes_payload_open_failures_total(\{[^}]*\})? [1-9]/.test(text) ? text : undefined;
    }, 'the failure to be counted');
    expect(metrics).toMatch(/aes_payload_open_failures_total/);

    const port = await freePort();
    const api = spawn(process.execPath, [path.join(DIST, 'api/server.js')], { env: envWith({ TEMPORAL_NAMESPACE: REKEY, PAYLOAD_ENCRYPTION_KEYS: second, PORT: String(port) }), stdio: 'ignore' });
    children.push(api);
    const ready = await until(async () => {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
      return res && { status: res.status, body: await res.json() };
    }, 'the API to answer');
    expect(ready).toEqual({ status: 503, body: { status: 'unavailable', checks: { postgres: 'ok', redis: 'ok', temporal: 'ok', payloads: 'unopenable' } } });
    await redis().del(unopenableMark(REKEY));
  }, 240_000);
});
