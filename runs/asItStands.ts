import { hasPrefix } from '../domain/ids';
import { toRunResponse, type RunKind, type RunResponse } from '../domain/runs';
import type { Scope } from '../domain/scopes';
import { ZERO_USAGE } from '../domain/usage';
import type { RunStatus } from '../domain/errors';
import { findRun } from '../db/runs';
import { requiredAction } from '../domain/actions';
import { describeRun, type RunWorkflowState } from '../workflowClients/agentRun.client';
import { workspaceOf } from '../callers/principal';
import type { Principal } from '../callers/principal';
import { temporal } from '../infra/temporalClient';
import { notFound } from '../callers/tenancy';

/** A run without a record: queued while its workflow is open, else how the workflow ended without settling. */
const UNRECORDED_STATUS: Record<RunWorkflowState, RunStatus> = { open: 'queued', completed: 'failed', cancelled: 'cancelled', ended: 'failed' };

/** Each kind of run is readable only with the scope that could have created it. */
const SCOPE_OF_KIND: Record<RunKind, Scope> = { response: 'responses:create', agent_run: 'agents:run', message: 'messages:create', report: 'reports:create', extraction: 'extractions:create' };

/** The scopes that can read some kind of run (the run endpoints admit any, then check the run's own). */
export const RUN_READER_SCOPES = ['agents:run', 'responses:create', 'messages:create', 'reports:create', 'extractions:create'] as const;

/** The kinds of run the caller may read: each kind needs the scope that creates it. */
export const readableKinds = (principal: Principal): RunKind[] => (Object.keys(SCOPE_OF_KIND) as RunKind[]).filter((kind) => principal.scopes.has(SCOPE_OF_KIND[kind]));

/**
 * `actions:approve` may decide on the calls of runs of every kind, so it reads them all (an approver
 * sees what it approves), but runs nothing and answers no client tool.
 */
export const APPROVER_SCOPE = 'actions:approve';

const readable = (principal: Principal, kind: string | undefined, approver: boolean) =>
  kind !== undefined && (principal.scopes.has(SCOPE_OF_KIND[kind as RunKind]) || (approver && principal.scopes.has(APPROVER_SCOPE)));

/**
 * The run as it stands, for the caller's workspace only and for a caller with the scope its kind
 * needs: another workspace's run, or one of a kind the credential could not have created, is the same
 * 404 as a missing one. A run is recorded when a worker takes it up; before that it is described from
 * its workflow's search attributes and memo, checked against the workspace before anything is read.
 */
export async function runAsItStands(principal: Principal, publicId: string, o: { approver?: boolean } = {}): Promise<RunResponse> {
  const workspace = workspaceOf(principal);
  const row = await findRun(workspace.id, publicId);
  if (row && !readable(principal, row.kind, o.approver === true)) throw notFound('run_not_found');
  if (row) {
    return toRunResponse({
      id: row.public_id,
      status: row.status,
      agent: row.agent,
      agentVersion: row.agent_version,
      conversation: row.internal ? undefined : row.conversation ?? undefined,
      // Stateless /responses runs keep no copy of the exchange: their output is not retrievable.
      output: row.output ?? [],
      usage: row.usage,
      metadata: row.metadata,
      requestId: row.request_id,
      traceId: row.trace_id,
      incompleteReason: row.incomplete_reason,
      // Only a running run waits for people: its pending calls are its required_action.
      ...(row.pending.length > 0 && { requiredAction: requiredAction(row.public_id, row.pending) }),
    });
  }
  if (!hasPrefix('run', publicId)) throw notFound('run_not_found');
  const described = await describeRun(await temporal(), publicId);
  if (!described || described.workspace !== workspace.publicId || !readable(principal, described.kind, o.approver === true)) throw notFound('run_not_found');
  const { memo } = described;
  return toRunResponse({
    id: publicId,
    status: UNRECORDED_STATUS[described.state],
    agent: memo.agent,
    agentVersion: memo.agent_version,
    conversation: memo.conversation,
    output: [],
    usage: ZERO_USAGE,
    metadata: memo.metadata ?? {},
    requestId: memo.request_id,
    traceId: memo.trace_id,
  });
}
