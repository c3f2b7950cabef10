import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import { QueryTypes } from 'sequelize';
import { dataConverter } from '../infra/payloadCodec';
import { db } from '../db/sequelize';
import { startRun } from '../workflowClients/agentRun.client';
import { callsHeld, providerRequests, releaseHeld, runInputFor, scriptModel, tenant, until, useApi, type Tenant } from './support/stack';
import { allFrames, openStream, TERMINALS, type Frame } from './support/sse';
import { freePort } from '../workers/temporalDevServer';
import { tcpProxy, type TcpProxy } from './support/tcpProxy';
import { childApi, childWorker, type Child } from './support/childProcesses';
import { GAVE_UP } from '../activities/untilAvailable';

/**
 * The service's own dependencies going away for a while (a PostgreSQL failover), on the real stack:
 * a worker and an API of their own reach PostgreSQL through a proxy the test cuts and restores, while
 * the rest of the suite keeps its database. No sleeps: each step waits for what it needs to have
 * happened (a held provider call, a logged outage).
 */
const api = useApi();
let client: Client;
let proxy: TcpProxy;
const children: Child[] = [];

beforeAll(async () => {
  client = new Client({ connection: await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! }), dataConverter });
  const database = new URL(process.env.DATABASE_URL!);
  proxy = await tcpProxy({ host: database.hostname, port: Number(database.port) });
});
afterAll(async () => {
  await Promise.all(children.map((c) => c.stop()));
  await proxy.close();
  await client.connection.close();
});

/** The database the stack uses, reached through the proxy. */
const proxiedDatabaseUrl = () => proxy.through(process.env.DATABASE_URL!);

async function ledger(runId: string): Promise<{ status: string; lines: number; charged: number }> {
  const [run] = await db().query<{ status: string; lines: number; charged: number }>(
    `SELECT r.status, (SELECT count(*)::int FROM ledger_lines l WHERE l.run_id = r.id) AS lines,
            (SELECT COALESCE(sum(l.credits), 0)::int FROM ledger_lines l WHERE l.run_id = r.id) AS charged
       FROM runs r WHERE r.public_id = :id`,
    { replacements: { id: runId }, type: QueryTypes.SELECT },
  );
  return run;
}

function respond(url: string, t: Tenant, input: string): Promise<Response> {
  return fetch(`${url}/api/v2/responses`, { method: 'POST', headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json' }, body: JSON.stringify({ agent: t.agent, input }) });
}

describe('a PostgreSQL outage', () => {
  it('loses no run in flight: each completes with one provider call and one ledger line, and the API answers 503 with Retry-After meanwhile', async () => {
    const queue = `outage-pg-${Date.now()}`;
    const env = { DATABASE_URL: proxiedDatabaseUrl() };
    const [worker, proxiedApi] = await Promise.all([childWorker(queue, env), childApi(env)]);
    children.push(worker, proxiedApi);

    // Two plain runs and a streamed one, each waiting on its provider when the database goes.
    const tenants = await Promise.all([0, 1, 2].map(() => tenant({ scopes: ['responses:create'] })));
    await Promise.all(tenants.map((t, i) => scriptModel(t.model, [{ text: `answer ${i}`, hold: true }])));
    const inputs = await Promise.all(tenants.map((t, i) => runInputFor(t, { options: { stream: i === 2 } })));
    const handles = await Promise.all(inputs.map((input) => startRun(client, input, { taskQueue: queue })));
    await Promise.all(tenants.map((t) => callsHeld(t.model, 1, 'each run to be waiting on its provider')));

    const before = worker.logs.length;
    await proxy.cut();
    // The replies come back while the database is gone: settling them fails, and must not ask again.
    await Promise.all(tenants.map((t) => releaseHeld(t.model)));
    await worker.logged('dependency unavailable', before);

    // A request meanwhile: a retryable answer, not a 500.
    const caller = await tenant({ scopes: ['responses:create'] });
    await expectRetryable(await respond(proxiedApi.url, caller, 'during the outage'));
    const ready = await fetch(`${proxiedApi.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ checks: { postgres: 'unavailable' } });
    // Nothing restarts a process for someone else's outage.
    expect((await fetch(`${proxiedApi.url}/healthz`)).status).toBe(200);

    await proxy.restore();
    const outcomes = await Promise.all(handles.map((h) => h.result()));
    outcomes.forEach((outcome, i) => expect(outcome.run).toMatchObject({ status: 'completed', output: [{ type: 'text', text: `answer ${i}` }] }));
    for (const [i, t] of tenants.entries()) {
      expect(await providerRequests(t.model)).toHaveLength(1);
      expect(await ledger(inputs[i].runId)).toMatchObject({ status: 'completed', lines: 1 });
    }
    // The streamed run showed its text once and ended once.
    const seen = await allFrames(await openStream(api.url, `/api/v2/runs/${inputs[2].runId}/events`, tenants[2].key));
    expect(seen.filter((f) => f.event === 'response.output_text.delta').map((f) => f.data.delta).join('')).toBe('answer 2');
    expect(seen.filter((f) => TERMINALS.includes(f.event!))).toHaveLength(1);
    expect(seen.some((f) => f.data?.reset)).toBe(false);
    await worker.logged('dependency available again', before);

    // Back without a restart: the same API serves the next request.
    await scriptModel(caller.model, [{ text: 'after the outage' }]);
    const served = await respond(proxiedApi.url, caller, 'after the outage');
    expect(served.status).toBe(200);
    expect(await served.json()).toMatchObject({ status: 'completed', output: [{ type: 'text', text: 'after the outage' }] });
    expect((await fetch(`${proxiedApi.url}/readyz`)).status).toBe(200);
  });

  it('carries a run from its tool round to its settlement across the outage, asking each model call once', async () => {
    const tool = createServer((_req, res) => void res.writeHead(200, { 'content-type': 'application/json' }).end('{"order":"shipped"}'));
    await new Promise<void>((resolve) => tool.listen(0, '127.0.0.1', resolve));
    try {
      const queue = `outage-pg-tools-${Date.now()}`;
      const worker = await childWorker(queue, { DATABASE_URL: proxiedDatabaseUrl() });
      children.push(worker);
      const t = await tenant({ scopes: ['responses:create'] });
      // The answer after the tool round is held until the database is gone: its settlement meets the outage.
      await scriptModel(t.model, [{ toolCalls: [{ name: 'lookup', arguments: '{}' }] }, { text: 'it shipped', hold: true }]);
      const base = await runInputFor(t);
      const lookup = { type: 'http' as const, name: 'lookup', description: 'Look the order up', parameters: { type: 'object', properties: {} }, url: `http://127.0.0.1:${(tool.address() as AddressInfo).port}/orders` };
      const input = { ...base, agent: { ...base.agent, config: { model: t.model, tools: [lookup] } } };
      const handle = await startRun(client, input, { taskQueue: queue });
      await callsHeld(t.model, 1, 'the call after the tool round');

      const before = worker.logs.length;
      await proxy.cut();
      await releaseHeld(t.model);
      await worker.logged('dependency unavailable', before);
      await proxy.restore();

      expect((await handle.result()).run).toMatchObject({ status: 'completed', output: [{ type: 'text', text: 'it shipped' }] });
      expect(await providerRequests(t.model)).toHaveLength(2);
      expect(await ledger(input.runId)).toMatchObject({ status: 'completed', lines: 1 });
    } finally {
      tool.close();
    }
  });

  it('holds a run that begins during the outage until the database is back, and charges nothing for a run the outage outlasted', async () => {
    const queue = `outage-pg-start-${Date.now()}`;
    const worker = await childWorker(queue, { DATABASE_URL: proxiedDatabaseUrl() });
    children.push(worker);
    const [waits, givesUp] = await Promise.all([0, 1].map(() => tenant({ scopes: ['responses:create'] })));
    await scriptModel(waits.model, [{ text: 'recorded late' }]);
    await scriptModel(givesUp.model, [{ text: 'never asked' }]);

    const before = worker.logs.length;
    await proxy.cut();
    // The first run meets the outage as it begins (the first failure is what the worker logs)...
    const waiting = await runInputFor(waits);
    const waitingRun = await startRun(client, waiting, { taskQueue: queue });
    await worker.logged('dependency unavailable', before);
    // ...and the second one's deadline passes while the database is still gone.
    const outlasted = await runInputFor(givesUp, { options: { timeoutMs: 1000 } });
    const outlastedRun = await startRun(client, outlasted, { taskQueue: queue });
    await worker.logged(GAVE_UP, before);
    await proxy.restore();

    expect((await waitingRun.result()).run).toMatchObject({ status: 'completed', output: [{ type: 'text', text: 'recorded late' }] });
    expect(await providerRequests(waits.model)).toHaveLength(1);
    const failed = await outlastedRun.result();
    expect(failed).toMatchObject({ run: { status: 'failed' }, error: { code: 'service_unavailable' } });
    expect(await providerRequests(givesUp.model)).toHaveLength(0);
    expect(await ledger(outlasted.runId)).toMatchObject({ status: 'failed', lines: 1, charged: 0 });
  });
});

/** A deployment of its own in Temporal (its namespace), so what the test cuts reaches only its worker and API. */
const OUTAGE_NAMESPACE = process.env.TEST_SPARE_NAMESPACES!.split(',')[3];

/** Follows a streamed request to its end. */
async function streamed(url: string, t: Tenant, input: string): Promise<Frame[]> {
  return allFrames(await openStream(url, '/api/v2/responses', t.key, { agent: t.agent, input, stream: true }));
}

/** A plain run waited for and a streamed run followed through `api`, each held at its provider; and a caller for later. */
async function inFlight(api: string) {
  const [plain, stream, caller] = await Promise.all([0, 1, 2].map(() => tenant({ scopes: ['responses:create'] })));
  await scriptModel(plain.model, [{ text: 'plain answer', hold: true }]);
  await scriptModel(stream.model, [{ text: 'streamed answer', hold: true }]);
  const waiting = respond(api, plain, 'waits through the restart');
  const following = streamed(api, stream, 'streams through the restart');
  await Promise.all([callsHeld(plain.model, 1), callsHeld(stream.model, 1)]);
  return {
    caller,
    release: () => Promise.all([releaseHeld(plain.model), releaseHeld(stream.model)]),
    /** Both answered as completed, the stream with one terminal event, each run one provider call and one ledger line: their ids. */
    async completedOnce(): Promise<string[]> {
      const run = (await (await waiting).json()) as { id: string };
      expect(run).toMatchObject({ status: 'completed', output: [{ type: 'text', text: 'plain answer' }] });
      const frames = await following;
      expect(frames.filter((f) => TERMINALS.includes(f.event!)).map((f) => f.event)).toEqual(['response.completed']);
      const streamedRun = frames.find((f) => f.event === 'response.completed')!.data.id as string;
      for (const [t, id] of [[plain, run.id], [stream, streamedRun]] as const) {
        expect(await providerRequests(t.model)).toHaveLength(1);
        expect(await ledger(id)).toMatchObject({ status: 'completed', lines: 1 });
      }
      return [run.id, streamedRun];
    },
  };
}

/** A request during an outage: 503 service_unavailable with Retry-After. */
async function expectRetryable(answer: Response): Promise<void> {
  expect(answer.status).toBe(503);
  expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
  expect(await answer.json()).toMatchObject({ error: { code: 'service_unavailable' } });
}

/** Back without a restart: the same API serves a new run. */
async function expectServed(api: string, caller: Tenant): Promise<void> {
  await scriptModel(caller.model, [{ text: 'after the restart' }]);
  expect(await (await respond(api, caller, 'after the restart')).json()).toMatchObject({ status: 'completed', output: [{ type: 'text', text: 'after the restart' }] });
}

describe('a Temporal restart', () => {
  it('keeps the runs in flight and the clients waiting for them, and answers a request meanwhile 503 with Retry-After', async () => {
    const temporalProxy = await tcpProxy({ host: '127.0.0.1', port: Number(process.env.TEMPORAL_ADDRESS!.split(':')[1]) });
    try {
      const env = { TEMPORAL_ADDRESS: `127.0.0.1:${temporalProxy.port}`, TEMPORAL_NAMESPACE: OUTAGE_NAMESPACE };
      const [worker, proxiedApi] = await Promise.all([childWorker('agent-runs', env), childApi(env)]);
      children.push(worker, proxiedApi);
      const runs = await inFlight(proxiedApi.url);

      await temporalProxy.cut();
      await expectRetryable(await respond(proxiedApi.url, runs.caller, 'during the restart'));
      expect(await (await fetch(`${proxiedApi.url}/readyz`)).json()).toMatchObject({ checks: { temporal: 'unavailable' } });
      await runs.release();
      await temporalProxy.restore();

      const ids = await runs.completedOnce();
      // The workflows close in Temporal once it is back.
      const workflows = new Client({ connection: client.connection, namespace: OUTAGE_NAMESPACE, dataConverter });
      for (const id of ids) await expect(workflows.workflow.getHandle(id).result()).resolves.toMatchObject({ run: { status: 'completed' } });
      await expectServed(proxiedApi.url, runs.caller);
    } finally {
      await Promise.all(children.splice(0).map((c) => c.stop()));
      await temporalProxy.close();
    }
  });
});

/** A Redis server of the test's own, which it can stop and start again empty, as a restart without persistence leaves it. */
async function privateRedis(): Promise<{ url: string; stop(): Promise<void>; start(): Promise<void> }> {
  const port = await freePort();
  let server: ChildProcess | undefined;
  const start = async () => {
    server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    await until(() => new Promise<true | undefined>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => { socket.destroy(); resolve(true); });
      socket.once('error', () => resolve(undefined));
    }), 'the private Redis to listen');
  };
  const stop = () => new Promise<void>((resolve) => {
    if (!server || server.exitCode !== null) return resolve();
    server.once('exit', () => resolve());
    server.kill('SIGKILL');
  });
  await start();
  return { url: `redis://127.0.0.1:${port}`, start, stop };
}

describe('a Redis restart (empty)', () => {
  it('ends every stream with one terminal event, bills each run once, answers 503 with Retry-After meanwhile, and starts its limits again from empty', async () => {
    const redisServer = await privateRedis();
    try {
      // Its own failed-authentication limit, to see it start again from empty.
      const env = { REDIS_URL: redisServer.url, TEMPORAL_NAMESPACE: OUTAGE_NAMESPACE, AUTH_FAILURE_LIMIT: '3', AUTH_FAILURE_WINDOW_S: '3600' };
      const [worker, proxiedApi] = await Promise.all([childWorker('agent-runs', env), childApi(env)]);
      children.push(worker, proxiedApi);
      const runs = await inFlight(proxiedApi.url);
      // An address locked out by its failed keys.
      const stranger = { authorization: 'Bearer tgcc_unknown', 'x-forwarded-for': '203.0.113.77' };
      for (let i = 0; i < 4; i++) await fetch(`${proxiedApi.url}/api/v2/runs`, { headers: stranger });
      expect((await fetch(`${proxiedApi.url}/api/v2/runs`, { headers: stranger })).status).toBe(429);

      const before = proxiedApi.logs.length;
      await redisServer.stop();
      await proxiedApi.logged('dependency unavailable', before);
      await expectRetryable(await respond(proxiedApi.url, runs.caller, 'during the restart'));
      await runs.release();
      await redisServer.start();

      await runs.completedOnce();
      // Restarted empty: the lockout is gone with it.
      expect((await fetch(`${proxiedApi.url}/api/v2/runs`, { headers: stranger })).status).toBe(401);
      await expectServed(proxiedApi.url, runs.caller);
    } finally {
      await Promise.all(children.splice(0).map((c) => c.stop()));
      await redisServer.stop();
    }
  });
});
