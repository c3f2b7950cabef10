import { createHash } from 'node:crypto';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { postgresDataError, unavailableDependency } from '../infra/dependencyErrors';
import { actionOutcome, insertActions, resolveAction } from '../db/runActions';
import { lowerHold } from '../db/creditReservations';
import { transaction } from '../db/sql';
import { actionsPath, requiredAction, type ActionOutcome, type ActionStatus, type RequiredCall } from '../domain/actions';
import { costInputOf, heldWhileWaiting } from '../domain/billing';
import type { RunInput } from '../domain/runs';
import { RUN_EVENTS_TTL_S } from '../domain/streamEvents';
import { outboxOf } from './runs';
import { RunEvents } from './runEvents';

export interface RequiredActions {
  input: RunInput;
  /** The tool round the calls belong to (a model may reuse a call id in a later one). */
  round: number;
  calls: RequiredCall[];
  /** Model calls made so far, and the credits they consumed: what the hold keeps while the run waits. */
  callsMade: number;
  consumed: number;
  /** What the run held more for each later call for large tool results (absent in runs before). */
  extraPerCall?: number;
}

/**
 * The run waits on these calls: recorded (the run object's required_action), its hold lowered to what
 * it consumed and what its remaining calls may cost, and agent.run.action_required written, in one
 * transaction; then response.tool.action_required on the stream for each call, and the waiting
 * announced to the API that answers a non-streamed request (202). Safe to repeat: calls recorded by
 * an earlier attempt are not recorded, held or announced twice.
 */
export async function requireActions(r: RequiredActions): Promise<ArgumentsHashes> {
  try {
    return await recordRequiredActions(r);
  } catch (err) {
    // Bookkeeping retries until it succeeds through an outage, but a write that fails for what it
    // writes would fail forever, holding the run's credits and its turn: the run fails instead.
    if (unavailableDependency(err) || (!postgresDataError(err) && Context.current().info.attempt < REQUIRE_ACTIONS_ATTEMPTS)) throw err;
    throw ApplicationFailure.create({ type: 'internal_error', message: `The calls the run waits on could not be recorded: ${String(err)}`, nonRetryable: true });
  }
}

/**
 * Each recorded call's arguments_sha256, by call id: the workflow's update validator checks an
 * approval against it (the workflow's sandbox has no hash of its own).
 */
export type ArgumentsHashes = Record<string, string>;

/** Tries of recording the calls that wait before a failure that is not an outage fails the run. */
const REQUIRE_ACTIONS_ATTEMPTS = 5;

async function recordRequiredActions(r: RequiredActions): Promise<ArgumentsHashes> {
  const { input } = r;
  const calls = r.calls.map((call) => ({ ...call, arguments_sha256: argumentsSha256(call.arguments ?? '') }));
  const hashes = Object.fromEntries(calls.map((call) => [call.call_id, call.arguments_sha256]));
  const fresh = await transaction(async (sql) => {
    const inserted = await insertActions(input.runId, r.round, calls, sql);
    if (inserted.length === 0) return false;
    await lowerHold(input.runId, heldWhileWaiting(costInputOf({ ...input, config: input.agent.config }), r.callsMade, r.consumed, r.extraPerCall), sql);
    const outbox = outboxOf(input);
    // The arguments are the model's words: the partner reads them from the run, never from the event.
    const announced = calls.map(({ arguments: _, ...call }) => call);
    outbox.add('agent.run.action_required', { id: input.runId, agent: input.agent.publicId, agent_version: input.agent.version, status: 'running', required_action: requiredAction(input.runId, announced) });
    await outbox.write(sql);
    return true;
  });
  if (!fresh) return hashes;
  const stream = new RunEvents(input.runId);
  for (const call of calls) stream.emit('response.tool.action_required', { id: input.runId, ...call, submit_to: actionsPath(input.runId) });
  // The stream outlives the wait: a client resumes it when the answer comes, however late.
  const longest = Math.max(...calls.map((call) => Date.parse(call.expires_at))) - Date.now();
  stream.expireIn(RUN_EVENTS_TTL_S + Math.ceil(Math.max(0, longest) / 1000));
  stream.announceWaiting();
  await stream.flush();
  return hashes;
}

/** What an approval names to approve exactly these arguments: their SHA-256, hex. */
function argumentsSha256(args: string): string {
  return createHash('sha256').update(args, 'utf8').digest('hex');
}

export interface ClosedAction {
  runId: string;
  round: number;
  callId: string;
  tool: string;
  status: Exclude<ActionStatus, 'pending'>;
  reason?: string;
}

/**
 * A call stops waiting: answered, or expired. Recorded once (a repeat returns it as it was recorded);
 * a call that will not be made fails on the stream, and a client tool's output completes it there.
 */
export async function closeAction(c: ClosedAction): Promise<ActionOutcome> {
  const row = await resolveAction(c.runId, c.round, c.callId, c.status, c.reason ?? null);
  const stream = new RunEvents(c.runId);
  const event = { id: c.runId, call_id: c.callId, tool: c.tool };
  if (row.status === 'answered') stream.emit('response.tool.completed', event);
  if (row.status === 'denied') stream.emit('response.tool.failed', { ...event, error: 'Denied by a person.' });
  if (row.status === 'expired') stream.emit('response.tool.failed', { ...event, error: 'No answer came in time: denied.' });
  await stream.flush();
  return actionOutcome(row);
}
