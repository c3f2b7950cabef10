import { actionOutcome, findAction, type ActionRow } from '../db/runActions';
import { runStatus } from '../db/runs';
import { answerMismatch, type ActionAnswer, type ActionOutcome } from '../domain/actions';
import { invalidRequest, ServiceError } from '../domain/errors';
import { TERMINAL_STATUSES, type RunResponse } from '../domain/runs';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { temporal } from '../infra/temporalClient';
import { answerRunAction, isMissing } from '../workflowClients/agentRun.client';
import { notFound } from '../callers/tenancy';

const cancelledWhileWaiting = (runId: string, callId: string) => new ServiceError('action_not_pending', `Run ${runId} was cancelled while it waited on call ${callId}.`);

/**
 * An approval approves the arguments it was shown: it names their hash, which must be the call's. A
 * call recorded before calls had one is approved as before; a denial approves nothing.
 */
function approvedOtherArguments(row: ActionRow, answer: ActionAnswer): string | undefined {
  if (answer.decision !== 'approve' || row.arguments_sha256 === null) return undefined;
  if (answer.arguments_sha256 === undefined) return `To approve ${row.call_id}, send the arguments_sha256 it shows (${row.arguments_sha256}): the decision approves exactly those arguments.`;
  if (answer.arguments_sha256 !== row.arguments_sha256) return `${row.call_id} waits on arguments whose arguments_sha256 is ${row.arguments_sha256}, not ${answer.arguments_sha256}: read the run again and decide on what it shows.`;
  return undefined;
}

/** What an answer to a call no longer waiting gets: its outcome again (a replay), or a 409 when it was never answered. */
function closed(row: ActionRow, run: RunResponse): ActionOutcome {
  if (row.status === 'expired') throw new ServiceError('action_not_pending', `Call ${row.call_id} was not answered by ${row.expires_at.toISOString()}: it was denied.`);
  if (row.status === 'cancelled') throw cancelledWhileWaiting(run.id, row.call_id);
  if (row.status !== 'pending') return actionOutcome(row);
  throw new ServiceError('action_not_pending', `Run ${run.id} is ${run.status}: it no longer waits on call ${row.call_id}.`);
}

/**
 * Answers a call the run (the caller's, already checked) waits on: the answer goes to the run's
 * workflow as an update whose id is the call's, so it is accepted once, and every later answer to
 * the same call, whatever it says, gets the first one's outcome. A call already closed is answered
 * from its record, so a replay after the run ended gets the same answer.
 */
export async function answerAction(run: RunResponse, answer: ActionAnswer): Promise<ActionOutcome> {
  const row = await findAction(run.id, answer.call_id);
  if (!row) throw notFound('action_not_found');
  if (row.status !== 'pending' || TERMINAL_STATUSES.has(run.status)) return closed(row, run);
  // Past its deadline a call is denied, whether or not a lagging worker has closed it yet.
  if (row.expires_at.getTime() <= Date.now()) throw new ServiceError('action_not_pending', `Call ${row.call_id} was not answered by ${row.expires_at.toISOString()}: it was denied.`);
  const mismatch = answerMismatch(row.type, answer) ?? approvedOtherArguments(row, answer);
  if (mismatch) throw invalidRequest(mismatch);
  try {
    // The run's validator checks the round and the hash again: the answer names the round of the call it was checked against.
    const outcome = await answerRunAction(await temporal(), run.id, `${row.call_id}#${row.round}`, { ...answer, round: row.round });
    // Accepted just as the run was cancelled: the call was closed by the cancel, not by this answer.
    if (outcome.status === 'cancelled') throw cancelledWhileWaiting(run.id, row.call_id);
    return outcome;
  } catch (err) {
    // The run stopped waiting on the call meanwhile (it expired, or the run ended): as its record says now.
    const now = await findAction(run.id, answer.call_id);
    if (now && now.status !== 'pending') return closed(now, run);
    // Refused by the run's validator while the call's closing is being recorded, or the run ended (cancelled) mid-answer.
    const ended = TERMINAL_STATUSES.has((await runStatus(run.id)) ?? 'running');
    if (ended || err instanceof WorkflowUpdateFailedError || isMissing(err)) throw new ServiceError('action_not_pending', `Run ${run.id} no longer waits on call ${answer.call_id}.`);
    throw err;
  }
}
