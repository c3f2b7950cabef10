import { Client, Connection } from '@temporalio/client';
import { dataConverter } from '../infra/payloadCodec';
import { QueryTypes } from 'sequelize';
import { redis } from '../infra/redis';
import { reserveCredits } from '../db/creditReservations';
import { db } from '../db/sequelize';
import { runEventsKey } from '../domain/streamEvents';
import { startRun } from '../workflowClients/agentRun.client';
import { reconcileNow, RECONCILE_SCHEDULE_ID } from '../workflowClients/reconcileRuns.client';
import { insertJob, jobById, jobCounts } from '../db/jobs';
import { mintId } from '../domain/ids';
import { callsHeld, closeAll, runInputFor, scriptModel, tenant, until } from './support/stack';

let client: Client;
beforeAll(async () => {
  client = new Client({ connection: await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! }), dataConverter });
});
afterAll(async () => {
  await client.connection.close();
  await closeAll();
});

async function recorded(runId: string) {
  const [row] = await db().query<{ status: string; error_code: string | null; lines: number; credits: number | null; reconciled: boolean }>(
    `SELECT r.status, r.error_code, r.reconciled_at IS NOT NULL AS reconciled, (SELECT count(*)::int FROM ledger_lines l WHERE l.run_id = r.id) AS lines,
            (SELECT credits::int FROM ledger_lines l WHERE l.run_id = r.id) AS credits
       FROM runs r WHERE r.public_id = :id`,
    { replacements: { id: runId }, type: QueryTypes.SELECT },
  );
  return row;
}

/**
 * Makes rows of this test's own an hour old, past the reconciler's minimum age: passes at that age
 * leave other test files' young work alone, however slowly a loaded machine starts it. The Schedule's
 * own pass (each minute) may then get to a row first, so the tests check what became of the row, not
 * which pass reported it.
 */
const age = (table: string, idColumn: string, ids: string[], columns = ['created_at']) =>
  db().query(`UPDATE ${table} SET ${columns.map((c) => `${c} = ${c} - interval '1 hour'`).join(', ')} WHERE ${idColumn} IN (:ids)`, { replacements: { ids } });

describe('the reconciler', () => {
  it('is a Schedule the background workers create, visible in the Temporal UI', async () => {
    const schedule = await client.schedule.getHandle(RECONCILE_SCHEDULE_ID).describe();
    expect(schedule.action).toMatchObject({ type: 'startWorkflow', workflowType: 'reconcileRuns', taskQueue: 'background' });
  });

  it('settles a run whose workflow an operator terminated: a terminal status, one ledger line, one terminal event', async () => {
    const t = await tenant();
    // Held, never released: the call can end only by the terminate (Temporal's answer to its next
    // heartbeat), never by settling the run itself while a loaded machine is slow to reconcile.
    await scriptModel(t.model, [{ text: 'never finished', hold: true }]);
    const input = await runInputFor(t, { options: { stream: true } });
    const handle = await startRun(client, input);
    await callsHeld(t.model, 1, 'the model call');
    expect((await recorded(input.runId)).status).toBe('running');

    await handle.terminate('an operator stopped it');
    // A younger open run is left alone (its workflow may be about to settle it)...
    expect((await reconcileNow(client)).settled).not.toContain(input.runId);
    expect((await recorded(input.runId)).status).toBe('running');
    // ...an older one is settled.
    await age('runs', 'public_id', [input.runId], ['created_at', 'started_at']);
    await reconcileNow(client);
    const settled = await until(async () => ((await recorded(input.runId)).status !== 'running' ? recorded(input.runId) : undefined), 'the run to be settled');
    // Marked as the reconciler's: GET /api/v2/runs?reconciled=true lists it among the runs that need attention.
    expect(settled).toMatchObject({ status: 'failed', error_code: 'internal_error', lines: 1, reconciled: true });

    const events = await redis().xrange(runEventsKey(input.runId), '-', '+');
    const types = events.map(([, fields]) => fields[1]);
    expect(types.filter((type) => type.startsWith('response.') && ['response.completed', 'response.failed', 'response.cancelled'].includes(type))).toEqual(['response.failed']);
    // Settling again changes nothing.
    expect((await reconcileNow(client)).settled).not.toContain(input.runId);
    expect((await recorded(input.runId)).lines).toBe(1);
  });

  it('gives back the reservation of a run that never ran (its workflow ended while it was queued)', async () => {
    const t = await tenant({ credits: 1_000 });
    const input = await runInputFor(t);
    expect(await reserveCredits(input.workspace.id, input.runId, 400)).toBe(true);
    // A queue no worker polls: the run stays queued, then an operator terminates it.
    const handle = await startRun(client, input, { taskQueue: `nobody-${input.runId}` });
    await handle.terminate('never taken up');
    await age('credit_reservations', 'run_public_id', [input.runId]);
    await reconcileNow(client);
    const credits = async () => (await db().query<{ credits: number }>('SELECT credits FROM workspaces WHERE id = :id', { replacements: { id: input.workspace.id }, type: QueryTypes.SELECT }))[0].credits;
    await until(async () => ((await credits()) === 1_000 ? true : undefined), 'the reservation to be given back');
    expect((await reconcileNow(client)).released).not.toContain(input.runId);
  });

  it('fails background work recorded but never started, and leaves work with a workflow alone', async () => {
    const t = await tenant({ scopes: ['jobs:create'] });
    const input = await runInputFor(t);
    // As if the request that recorded the job died before starting its workflow.
    const orphan = mintId('job');
    await insertJob({ publicId: orphan, workspaceId: input.workspace.id, type: 'runs.batch', params: { agent: t.agent }, items: [{ input: 'x' }, { input: 'y' }], requestId: 'req_orphan', traceId: input.traceId });
    // And one whose workflow exists but has not begun (a queue no worker polls).
    const waiting = mintId('job');
    await insertJob({ publicId: waiting, workspaceId: input.workspace.id, type: 'runs.batch', params: { agent: t.agent }, items: [{ input: 'x' }], requestId: 'req_waiting', traceId: input.traceId });
    await client.workflow.start('job', { taskQueue: `nobody-${waiting}`, workflowId: waiting, args: [{ jobId: waiting, type: 'runs.batch', params: { agent: t.agent }, workspace: input.workspace, fromSeq: 0 }] });
    await age('jobs', 'public_id', [orphan, waiting]);
    expect((await reconcileNow(client)).failed).not.toContain(waiting);
    const job = await until(async () => ((await jobById(orphan))!.status === 'failed' ? jobById(orphan) : undefined), 'the orphan job to be failed');
    expect(job.status).toBe('failed');
    expect(await jobCounts(job.id)).toMatchObject({ queued: 0, cancelled: 2 });
    expect((await jobById(waiting))!.status).toBe('queued');
    await client.workflow.getHandle(waiting).terminate('test over');
  });

  it('deletes the recorded cancels no run can read any more (older than any run can live), and keeps the others', async () => {
    const [old, recent] = [mintId('run'), mintId('run')];
    await db().query(`INSERT INTO run_cancel_requests (run_public_id, requested_at) VALUES (:old, now() - interval '1 day'), (:recent, now() - interval '1 minute')`, { replacements: { old, recent } });
    expect((await reconcileNow(client)).purgedCancels).toBeGreaterThanOrEqual(1);
    const left = await db().query<{ id: string }>('SELECT run_public_id AS id FROM run_cancel_requests WHERE run_public_id IN (:ids)', { replacements: { ids: [old, recent] }, type: QueryTypes.SELECT });
    expect(left.map((r) => r.id)).toEqual([recent]);
  });
});
