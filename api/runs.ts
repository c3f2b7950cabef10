import { hasPrefix } from '../domain/ids';
import { toRunResponse, type RunResponse } from '../domain/runs';
import { ZERO_USAGE } from '../domain/usage';
import type { RunStatus } from '../domain/errors';
import { findRun } from '../db/runs';
import { describeRun, type RunWorkflowState } from '../workflows/agentRun.client';
import type { Principal } from './state';
import { temporal } from '../infra/temporalClient';
import { notFound } from './tenancy';

/** A run without a record: queued while its workflow is open, else how the workflow ended without settling. */
const UNRECORDED_STATUS: Record<RunWorkflowState, RunStatus> = { open: 'queued', completed: 'failed', cancelled: 'cancelled', ended: 'failed' };

/**
 * The run as it stands, for the caller's workspace only (another workspace's run is the same 404 as a
 * missing one). A run is recorded when a worker takes it up; before that it is described from its
 * workflow's search attributes and memo, checked against the workspace before anything is read.
 */
export async function runAsItStands(workspace: NonNullable<Principal['workspace']>, publicId: string): Promise<RunResponse> {
  const row = await findRun(workspace.id, publicId);
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
    });
  }
  if (!hasPrefix('run', publicId)) throw notFound('run_not_found');
  const described = await describeRun(await temporal(), publicId);
  if (!described || described.workspace !== workspace.publicId) throw notFound('run_not_found');
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
