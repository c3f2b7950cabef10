import { Client, Connection } from '@temporalio/client';
import { QueryTypes } from 'sequelize';
import { dataConverter } from '../infra/payloadCodec';
import { db } from '../db/sequelize';
import { startRun } from '../workflows/agentRun.client';
import { callsHeld, providerRequests, releaseHeld, runInputFor, scriptModel, tenant, useApi, type Tenant } from './support/stack';
import { allFrames, openStream, TERMINALS } from './support/sse';
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
function proxiedDatabaseUrl(): string {
  const url = new URL(process.env.DATABASE_URL!);
  url.port = String(proxy.port);
  return url.toString();
}

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
    const refused = await respond(proxiedApi.url, caller, 'during the outage');
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await refused.json()).toMatchObject({ error: { code: 'service_unavailable' } });
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
