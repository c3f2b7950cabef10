import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { config } from '../infra/config';
import { ServiceError } from '../domain/errors';
import { mintId } from '../domain/ids';
import type { RunOptions, RunOutcome, RunResponse } from '../domain/runs';
import { runStatus } from '../db/runs';
import { describeRun, runHandle, startRun, type RunHandle } from '../workflowClients/agentRun.client';
import type { Principal } from '../callers/principal';
import { runAsItStands } from './asItStands';
import type { RelayOptions, StreamWire } from './runEventRelay';
import { temporal } from '../infra/temporalClient';
import type { ExecutionRequest } from '../contract/runtimeInput';
import { planRun, type ExecutionTarget, type RunRequester } from '../planning/planRun';
import { awaitedRuns, runAnswers } from '../infra/metrics';
import { listenForSettlement, outcomeOf, type Settlement } from './settlements';
import { interruptTurnsBefore } from './cancelRun';
import { answerAction } from './runActions';
import type { ActionAnswer } from '../domain/actions';
import { latestEntryId } from './runStreamReader';
import { runEventsKey } from '../domain/streamEvents';

export type { ExecutionTarget } from '../planning/planRun';

/** Stripe's recovery point, as an idempotent request sees it. */
export interface RecoveryPoint {
  /** The resource (a run id) an earlier attempt of this request began: attach to it instead of beginning another. */
  resumed?: string;
  /** Records the resource this request is about to begin, before it begins it. */
  begin(resourceId: string): Promise<void>;
}

/** Who asks for a run, as the pipeline sees the request (whichever surface it came through). */
export interface RunCaller {
  principal: Principal;
  requester: RunRequester;
  recovery?: RecoveryPoint;
  /** Told the run's id, and its trace id once planned, as soon as they are known: the request's log and its error answers name them. */
  noteRun(runId: string, traceId?: string): void;
}

/**
 * What the caller is answered: the run's outcome (200, or its error's status), the run as it stands
 * (`waiting`: it waits for people, or outlasted the wait: 202, which the caller polls and idempotency
 * does not store), or its event stream.
 */
export type RunAnswer =
  | { kind: 'outcome'; outcome: RunOutcome }
  | { kind: 'as_it_stands'; run: RunResponse; waiting: boolean }
  | { kind: 'stream'; handle: WorkflowHandle; relay: Omit<RelayOptions, 'principal' | 'requestId'> };

/** The run is over: its outcome is the answer (counted as the spec's answers are). */
function answeredWith(outcome: RunOutcome): RunAnswer {
  runAnswers.inc({ status: outcome.run.status });
  return { kind: 'outcome', outcome };
}

/** The run's outcome, or undefined when it is not over within `ms` (or `outcome` gave none). */
function within(outcome: Promise<RunOutcome | undefined>, ms: number): Promise<RunOutcome | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
  return Promise.race([outcome, late]).finally(() => clearTimeout(timer));
}

/**
 * Answers from the run: its event stream, or its outcome. The wait for the outcome is bounded
 * (timeout_ms plus a grace), and ends when the run begins to wait for people: then the answer is 202
 * with the run as it stands, which the caller polls, and which idempotency does not store, so a retry
 * with the same key attaches to the run.
 */
async function answer(caller: RunCaller, handle: RunHandle, runId: string, options: RunOptions, original: boolean, settlement: Settlement | undefined, how: Answering): Promise<RunAnswer> {
  caller.noteRun(runId);
  // Only the stream that started the run cancels it by going away (not a background one's); a retry attaching to it follows it.
  if (options.stream) return { kind: 'stream', handle, relay: { runId, cancelOnDisconnect: original && !how.background, wire: how.wire, after: how.after } };
  if (how.background) return { kind: 'as_it_stands', run: await runAsItStands(caller.principal, runId), waiting: false };
  // A retry that attaches to a run waiting for people answers as the first request did.
  if (!settlement) {
    const standing = await runAsItStands(caller.principal, runId);
    if (standing.required_action && !(how.holdForApprovers && !waitsOnCaller(standing))) return { kind: 'as_it_stands', run: standing, waiting: true };
  }
  let outcome: RunOutcome | undefined;
  awaitedRuns.inc();
  try {
    // A run that waits for people is answered as it stands at once: its wait may last days (unless
    // the request holds for approvers, within the same bound).
    const settled = settlement ? Promise.race([outcomeOf(handle, settlement), waitsOnAnswer(caller.principal, runId, settlement, how.holdForApprovers === true)]) : outcomeOf(handle);
    outcome = await within(settled, options.timeoutMs + config().apiWaitGraceMs);
  } catch (err) {
    if (err instanceof WorkflowFailedError) throw new ServiceError('internal_error', 'Internal error.');
    throw err;
  } finally {
    awaitedRuns.dec();
  }
  if (outcome) return answeredWith(outcome);
  return { kind: 'as_it_stands', run: await runAsItStands(caller.principal, runId), waiting: true };
}

/** Whether the run waits on its caller: client-run tool calls, which only the request's caller answers. */
const waitsOnCaller = (run: RunResponse) => run.required_action?.calls.some((c) => c.type === 'client_tool') === true;

/**
 * Resolves (undefined) when the run begins to wait for people; holding for approvers, only once it
 * waits on its caller: while it waits on approvers only, the request waits on with it, through each
 * round's wait (the next is listened for before the run is read, so none is missed).
 */
async function waitsOnAnswer(principal: Principal, runId: string, settlement: Settlement, holdForApprovers: boolean): Promise<undefined> {
  await settlement.waitsForPeople;
  if (!holdForApprovers) return undefined;
  for (;;) {
    const next = settlement.nextWait();
    if (waitsOnCaller(await runAsItStands(principal, runId))) return undefined;
    await next;
  }
}

/**
 * A run's waiting calls answered (the `/v1` surface's tool messages, function call outputs and
 * approval responses), then the run answered as execute answers one: its outcome, or as it stands
 * when it waits again; streamed, from what the run does next. Listening begins before the answers
 * go, so the run's next wait or its settlement is heard, and the stream's place is taken then too.
 */
export async function continueRun(caller: RunCaller, runId: string, outputs: ActionAnswer[], options: RunOptions, how: Answering = {}): Promise<RunAnswer> {
  const run = await runAsItStands(caller.principal, runId);
  const settlement = listenForSettlement(runId);
  try {
    await settlement.ready;
    const after = options.stream ? await latestEntryId(runEventsKey(runId)) : undefined;
    for (const answered of outputs) await answerAction(run, answered);
    return await answer(caller, runHandle(await temporal(), runId), runId, options, false, settlement, { ...how, after });
  } finally {
    settlement.stop();
  }
}

/** How a run is answered beyond the spec's way: another surface's stream shapes, and whether the answer waits for it (`background`: not, the run as it stands). */
export interface Answering {
  wire?: StreamWire;
  background?: boolean;
  /** A stream relays only the entries after this one (a continued run's, from its continuation). */
  after?: string;
  /**
   * A non-streamed answer waits on through the run's waits for approvers, within its bound (a wire
   * with no shape for an approval: chat completions); it still stops where the run waits on its caller.
   */
  holdForApprovers?: boolean;
}

/**
 * The one execution pipeline behind /responses, /agents/{id}/runs and /conversations/{id}/messages,
 * and the `/v1` surface's runs (which write their streams through a `wire` of their own).
 * The body was validated and the caller authenticated and scoped before this runs; here: resolve the
 * agent and its configuration (404/409), gate on credits (402), then start the run and say how to
 * answer (the surface writes it: api/execution/).
 * A retried idempotent request that began a run before attaches to it instead (its recovery point).
 */
export async function execute(caller: RunCaller, request: ExecutionRequest, target: ExecutionTarget, how: Answering = {}): Promise<RunAnswer> {
  const client = await temporal();
  const resumed = caller.recovery?.resumed;
  if (resumed) {
    // Looked up in this order: a run recorded before the lookup had a workflow, so if Temporal no
    // longer keeps it (past its retention) it is answered from its record, never held or started again.
    const recorded = (await runStatus(resumed)) !== undefined;
    if (await describeRun(client, resumed)) return answer(caller, runHandle(client, resumed), resumed, request.options, false, undefined, how);
    if (recorded) {
      caller.noteRun(resumed);
      return { kind: 'as_it_stands', run: await runAsItStands(caller.principal, resumed), waiting: false };
    }
  }

  // A resumed request whose run never reached Temporal starts it now, under the id it recorded.
  const runId = resumed ?? mintId('run');
  // Listening while the run is planned, and in place before it starts, so its settlement is heard.
  const settlement = request.options.stream || how.background ? undefined : listenForSettlement(runId);
  try {
    // The recovery point is stored before anything is held or started: from here on the key is never
    // released, and a replay (which begins nothing) stops here.
    const input = await planRun(caller.requester, request, target, runId, () => caller.recovery?.begin(runId));
    caller.noteRun(runId, input.traceId);
    const heard = settlement && (await settlement.ready) ? settlement : undefined;
    const handle = await startRun(client, input);
    if (target.concurrency === 'interrupt' && input.turn) await interruptTurnsBefore(client, input.turn);
    return await answer(caller, handle, runId, request.options, !resumed, heard, how);
  } finally {
    settlement?.stop();
  }
}
