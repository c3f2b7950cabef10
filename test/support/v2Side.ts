import { QueryTypes } from 'sequelize';
import { db } from '../../db/sequelize';
import { temporal } from '../../infra/temporalClient';
import { call, type Tenant } from './stack';

/**
 * The v2 side of work done through another surface (the `/v1` one): the run readable at
 * GET /api/v2/runs/{id}, completed, with one ledger line, and its workflow in Temporal with the usual
 * search attributes (a stored /v1 response is a conversation's `message`). Returns the run as v2 reads it.
 */
export async function expectOneRun(apiUrl: string, t: Tenant, runId: string, kind: 'response' | 'message' = 'response'): Promise<Record<string, any>> {
  const run = await call(apiUrl, 'GET', `/api/v2/runs/${runId}`, { key: t.key });
  expect(run.status).toBe(200);
  expect(run.body).toMatchObject({ id: runId, status: 'completed', agent: t.agent });
  const lines = await db().query<{ n: number }>('SELECT count(*)::int AS n FROM ledger_lines l JOIN runs r ON r.id = l.run_id WHERE r.public_id = :id', { replacements: { id: runId }, type: QueryTypes.SELECT });
  expect(lines[0].n).toBe(1);
  const description = await (await temporal()).workflow.getHandle(runId).describe();
  expect(description.type).toBe('agentRun');
  expect(description.searchAttributes).toMatchObject({ WorkspaceId: [t.workspace], AgentId: [t.agent], Kind: [kind] });
  return run.body;
}

/** How many runs the workspace has: one request, one run. */
export async function runsOf(t: Tenant): Promise<number> {
  const [row] = await db().query<{ n: number }>('SELECT count(*)::int AS n FROM runs r JOIN workspaces w ON w.id = r.workspace_id WHERE w.public_id = :ws', { replacements: { ws: t.workspace }, type: QueryTypes.SELECT });
  return row.n;
}

/** The workspace's runs as recorded: status and error code, oldest first. */
export async function recordedRuns(t: Tenant): Promise<{ status: string; error_code: string | null }[]> {
  return db().query('SELECT r.status, r.error_code FROM runs r JOIN workspaces w ON w.id = r.workspace_id WHERE w.public_id = :ws ORDER BY r.id', { replacements: { ws: t.workspace }, type: QueryTypes.SELECT });
}

/** How many conversations the workspace has (internal ones included). */
export async function conversationsOf(t: Tenant): Promise<number> {
  const [row] = await db().query<{ n: number }>('SELECT count(*)::int AS n FROM conversations c JOIN workspaces w ON w.id = c.workspace_id WHERE w.public_id = :ws', { replacements: { ws: t.workspace }, type: QueryTypes.SELECT });
  return row.n;
}
