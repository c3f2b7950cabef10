import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  patched,
  proxyActivities,
  setHandler,
  TimeoutFailure,
  type RetryPolicy,
} from '@temporalio/workflow';
import type * as activities from '../activities';
import type { BegunRun } from '../activities/runs';
import { ERROR_TABLE, isErrorCode, type ErrorCode } from '../domain/errors';
import { conversational, finalOutput, REPAIR_ATTEMPTS, timedOut, type Deadline, type OutputItem, type RunInput, type RunOutcome } from '../domain/runs';
import { type IncompleteReason } from '../domain/runResponse';
import { addUsage, ZERO_USAGE, type Usage } from '../domain/usage';
import { DEADLINE_GRACE_MS, DEPENDENCY_RETRY_MAX_MS, MODEL_HEARTBEAT_TIMEOUT_MS, TOOL_ATTEMPT_TIMEOUT_MS, TURN_RECHECK_MS, TURN_WAIT_LIMIT_MS } from '../domain/timings';
import { answerAction, turnEnded } from '../workflowClients/agentRun.options';
import { actionOf, actionTimeoutMs, answerMismatch, MAX_ACTION_OUTPUT_CHARS, notMadeResult, type ActionAnswer, type ActionOutcome, type ActionStatus, type RequiredCall } from '../domain/actions';
import { type ActionType } from '../domain/actionTypes';
import { callsLeft, costInputOf, creditsFor, maxRunCost, TOOL_RESULT_TOKENS, toolRoundExcess } from '../domain/billing';
import { passesToolLimit, spentBeforeCall, type LimitReason, type RunLimits } from '../domain/limits';
import type { TurnRef } from '../domain/turns';
import { findTool, fitToolResults, MAX_TOOL_ROUNDS, toolSpecs, type ToolCall, type ToolTurn } from '../domain/tools';
import { knowledgePlan, retrievalQuery, type Passage } from '../domain/knowledge';
import { mcpApprovalRequired, mcpServersOf, offeredMcpTools, type OfferedMcpTool } from '../domain/mcpTools';
import type { StreamEventType } from '../domain/streamEvents';
import { namedLocalActivities } from './namedActivities';
import { unsealed } from '../workflowClients/summaries';

/**
 * Model calls and HTTP tools are retried alike on purpose: both are remote calls billed or felt by
 * someone else, so each gets three tries in all over a few seconds. A 4xx, a refused target or the
 * run's deadline is final (non-retryable). A worker that dies mid-call is a retry too: the call
 * runs again on another worker.
 */
const REMOTE_CALL_RETRY: RetryPolicy = {
  initialInterval: '500ms',
  backoffCoefficient: 2,
  maximumInterval: '5s',
  maximumAttempts: 3,
};

/**
 * Retrieval is one indexed query: retried quickly a few times, then the run fails with
 * knowledge_unavailable rather than answer without it. A database outage is waited out inside the
 * call, up to the run's deadline, heartbeating (activities/untilAvailable.ts). A run with no
 * knowledge to retrieve from under `required` is final at once.
 */
const RETRIEVAL_RETRY: RetryPolicy = {
  initialInterval: '200ms',
  backoffCoefficient: 2,
  maximumInterval: '2s',
  maximumAttempts: 3,
};
const RETRIEVAL_PATCH = 'knowledge-retrieval';
/** Runs begun before their first call could settle them record no cancel. */
const CANCEL_RECORD_PATCH = 'record-cancel';
/** Runs begun before the tool calls of one reply ran at once make them one after another. */
const PARALLEL_TOOLS_PATCH = 'parallel-tool-calls';
/** Runs begun before a round's tool results were held for (or cut) send them to the model whole. */
const TOOL_RESULTS_HOLD_PATCH = 'tool-results-hold';
/** Runs begun before their limits (domain/limits.ts) failed after MAX_TOOL_ROUNDS tool rounds, and had no other bound. */
const LIMITS_PATCH = 'run-limits';

/**
 * Bookkeeping in PostgreSQL and Redis: short and idempotent, so retried until it succeeds, at most
 * DEPENDENCY_RETRY_MAX_MS apart so a run settles within seconds of a failover's end. A run settles
 * even after a long database outage; one that never does (terminated, timed out) is settled by the
 * reconciler instead. What cannot pass on retry is not retried: a settlement the database refuses for
 * what it holds (a data error) fails the run at once, as internal_error charged nothing, inside
 * settleRun itself (activities/runs.ts), and only its own failure comes back, non-retryable.
 */
const { settleRun, emitRunEvent, recordRunCancel, turnIsNext, requireActions, closeAction, holdForToolResults } = namedLocalActivities(
  { startToCloseTimeout: '10s', retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: DEPENDENCY_RETRY_MAX_MS } },
  {
    settleRun: 'settle: status, ledger, log and events',
    emitRunEvent: 'stream event',
    recordRunCancel: 'record the cancel',
    turnIsNext: 'is it this turn’s turn',
    requireActions: 'wait for people: record the calls, lower the hold, tell',
    closeAction: 'record what became of a call that waited',
    holdForToolResults: 'hold more for a large tool round',
  },
);

function handoffReason(args: string): string {
  try {
    const reason = (JSON.parse(args) as { reason?: unknown }).reason;
    if (typeof reason === 'string' && reason) return reason;
  } catch {
    // The model's arguments were not JSON; the handoff still happens.
  }
  return 'A person is needed.';
}

interface Failure {
  code: ErrorCode;
  message: string;
}

/** The server stopped a call at the run's deadline (its worker died, or it ran past the deadline). */
function ranOutOfTime(err: unknown): boolean {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof TimeoutFailure && cause.timeoutType === 'SCHEDULE_TO_CLOSE';
}

function failureOf(err: unknown, deadline: Deadline): Failure {
  if (ranOutOfTime(err)) return timedOut(deadline);
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure && isErrorCode(cause.type)) return { code: cause.type, message: cause.message };
  return { code: 'internal_error', message: 'The run failed inside the service.' };
}

/** Each call after the one before, stopping at the first failure (as runs begun before parallel tool calls did). */
async function oneAfterAnother<R>(calls: ToolCall[], use: (call: ToolCall) => Promise<R | string>): Promise<(R | string)[]> {
  const results: (R | string)[] = [];
  for (const call of calls) {
    const result = await use(call);
    results.push(result);
    if (typeof result !== 'string') break;
  }
  return results;
}

/** Thrown inside the run when its deadline has passed before a call could start. */
class DeadlinePassed extends Error {}

/**
 * One run of an agent: queued (behind earlier turns of its conversation, if any) → running (recorded by startRun, with the first model call) →
 * completed, or → failed / blocked with an error code from the table, or → cancelled when asked to
 * stop. Every path settles exactly once (settleRun).
 */
export async function agentRun(input: RunInput): Promise<RunOutcome> {
  // timeout_ms bounds the run's calls, not its bookkeeping. Each call is given what remains of it and
  // stops itself at the deadline (recording what it consumed), so the run needs no durable timer.
  // The workflow clock is deterministic: Date.now() here is the time of the current workflow task.
  const deadline: Deadline = { at: Date.now() + input.options.timeoutMs, timeoutMs: input.options.timeoutMs };
  const budget = () => {
    const remaining = deadline.at - Date.now();
    if (remaining <= 0) throw new DeadlinePassed();
    return remaining + DEADLINE_GRACE_MS;
  };
  // Model calls: the first one (startRun) also records the run as running.
  // Each activity says what it is in the Temporal UI (its summary: metadata only, never content).
  const modelCalls = (summary: string) =>
    proxyActivities<typeof activities>({
      summary: unsealed(summary),
      scheduleToCloseTimeout: budget(),
      // A dead worker's call is retried after it; a cancel reaches the call with a heartbeat's answer (timings.ts).
      heartbeatTimeout: MODEL_HEARTBEAT_TIMEOUT_MS,
      // Wait for the call to stop, so what it consumed is recorded before the run settles.
      cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
      retry: REMOTE_CALL_RETRY,
    });
  const retrieveKnowledge = (request: Parameters<typeof activities.retrieveKnowledge>[0]) =>
    proxyActivities<typeof activities>({
      summary: unsealed(`retrieval from ${request.collections.length} collection${request.collections.length === 1 ? '' : 's'}`),
      heartbeatTimeout: MODEL_HEARTBEAT_TIMEOUT_MS,
      scheduleToCloseTimeout: budget(),
      retry: RETRIEVAL_RETRY,
    }).retrieveKnowledge(request);
  const callTool = (call: Parameters<typeof activities.callTool>[0]) =>
    proxyActivities<typeof activities>({ summary: unsealed(`tool ${call.tool.name}`), startToCloseTimeout: TOOL_ATTEMPT_TIMEOUT_MS, scheduleToCloseTimeout: budget(), retry: REMOTE_CALL_RETRY }).callTool(call);
  // A remote MCP server's tools/list and tools/call: an HTTP tool's timeouts and retries.
  const discoverMcpTools = (d: Parameters<typeof activities.discoverMcpTools>[0]) =>
    proxyActivities<typeof activities>({ summary: unsealed(`mcp tools/list ${d.servers.map((s) => s.server_label).join(', ')}`), startToCloseTimeout: TOOL_ATTEMPT_TIMEOUT_MS, scheduleToCloseTimeout: budget(), retry: REMOTE_CALL_RETRY }).discoverMcpTools(d);
  const callMcpTool = (call: Parameters<typeof activities.callMcpTool>[0]) =>
    proxyActivities<typeof activities>({ summary: unsealed(`mcp ${call.server.server_label} ${call.tool}`), startToCloseTimeout: TOOL_ATTEMPT_TIMEOUT_MS, scheduleToCloseTimeout: budget(), retry: REMOTE_CALL_RETRY }).callMcpTool(call);

  let begun: BegunRun | undefined;
  let settled: RunOutcome | undefined;
  // A cancel is recorded the moment it arrives: the first call, which settles a run its reply ends,
  // then gives way to it even when the reply comes before the call hears of the cancel.
  let cancelRecorded: Promise<void> | undefined;
  CancellationScope.current().cancelRequested.catch(() => {
    if (patched(CANCEL_RECORD_PATCH)) cancelRecorded = CancellationScope.nonCancellable(() => recordRunCancel(input.runId));
  });
  const memory = conversational(input.kind) && input.options.memoryPolicy === 'auto';
  let usage: Usage = ZERO_USAGE;
  let usageEstimated = false;
  let historyOmitted = 0;
  /** The reply that became the output stopped at its cap. */
  let incomplete: IncompleteReason | undefined;
  let model = input.agent.config.model ?? 'default';
  const format = input.options.responseFormat;

  const policy = input.options.toolPolicy;
  const tools = toolSpecs(input.agent.config, policy);
  const mcpServers = mcpServersOf(input.agent.config, policy);
  /** The MCP tools offered to the model, by the name it calls (allowed, and listed by a server reached at the start): no other is called. */
  const offeredMcp = new Map<string, OfferedMcpTool>();
  /** What the run found before it began, for its stream after response.started. */
  const notices: { type: StreamEventType; data: unknown }[] = [];
  const toolTurns: ToolTurn[] = [];
  const toolNames: string[] = [];
  let handoff: { reason: string } | undefined;
  let calls = 0;
  /** Tool calls the model asked for and the run made (every call of a reply, parallel ones included). */
  let toolCallsMade = 0;
  /** What the model said so far, reply by reply: the output a run ended at a limit keeps. */
  const said: string[] = [];
  // A run planned before limits has the calls its hold counted (the first, MAX_TOOL_ROUNDS rounds, the repair).
  const limits: RunLimits = input.limits ?? { max_model_calls: 1 + MAX_TOOL_ROUNDS + REPAIR_ATTEMPTS };
  /** What the run held more, for each later model call, for large tool results (heldFor). */
  let extraPerCall = 0;
  const knowledge = knowledgePlan(input.agent.config, input.options.knowledgePolicy);
  let passages: Passage[] = [];
  const passageRefs = () => passages.map(({ chunk, document, rank }) => ({ chunk, document, rank }));

  /**
   * The calls of the current tool round that wait for people, by call id (unique in its reply:
   * domain/callIds.ts), until each is closed; with their round and the hash of their arguments, which
   * an answer must name (round) and an approval must name (arguments_sha256).
   */
  const waiting = new Map<string, { type: ActionType; round: number; argumentsSha256?: string; expiresAt: number; answer?: ActionAnswer; closing?: boolean; outcome?: ActionOutcome }>();
  // Refused here, an answer never reaches history: a call the run does not wait on (now), or the wrong kind of answer.
  setHandler(
    answerAction,
    async (answer) => {
      const call = waiting.get(answer.call_id)!;
      call.answer = answer;
      call.closing = true;
      // Answered once what became of the call is recorded, so the run read after it shows it.
      await condition(() => call.outcome !== undefined);
      return call.outcome!;
    },
    {
      validator: (answer) => {
        const call = waiting.get(answer.call_id);
        if (!call || call.closing) throw new Error(`The run does not wait on call ${answer.call_id}.`);
        // The workflow's own clock too: an answer that comes after the deadline, however late this task runs, is refused.
        if (Date.now() >= call.expiresAt) throw new Error(`Call ${answer.call_id} is past its deadline: it is denied.`);
        const mismatch = answerMismatch(call.type, answer);
        if (mismatch) throw new Error(mismatch);
        // Checked here as well as in the API: an answer decides the call of its round, and an approval the arguments it was shown.
        // (An API instance of the release before sends no round; a run recorded before it has no hashes.)
        if (answer.round !== undefined && answer.round !== call.round) throw new Error(`The run waits on call ${answer.call_id} of round ${call.round}, not of round ${answer.round}.`);
        if (call.type === 'approval' && answer.decision === 'approve' && call.argumentsSha256 !== undefined && answer.arguments_sha256 !== call.argumentsSha256) {
          throw new Error(`Call ${answer.call_id} waits on arguments whose arguments_sha256 is ${call.argumentsSha256}: the approval names others.`);
        }
      },
    },
  );

  const ask = async (repair?: { previous: string; problems: string[] }) => {
    const call = {
      deadline,
      format,
      stream: input.options.stream,
      call: ++calls,
      tools,
      // `required` forces the first answer to be a tool call; after that the model may answer.
      toolChoice: policy === 'required' && toolTurns.length === 0 ? ('required' as const) : ('auto' as const),
      toolTurns: [...toolTurns],
      repair,
      knowledge: passages,
    };
    const summary = `model call ${call.call}${repair ? ' (repair)' : toolTurns.length > 0 ? ' (after tools)' : ''}`;
    let reply;
    if (!begun) {
      // A first reply that ends the run is settled by the call itself (one activity and two workflow tasks, as the floor).
      ({ begun, settled, ...reply } = await modelCalls(`${summary}, starting the run`).startRun({ run: input, memory, call, settle: { knowledge: passageRefs() }, ...(notices.length > 0 && { notices }) }));
    } else {
      const historyFrom = memory ? { conversationId: begun.conversationId, beforeRunKey: begun.runKey } : undefined;
      reply = await modelCalls(summary).generate({ ...call, runId: input.runId, traceId: input.traceId, config: input.agent.config, input: input.input, attachments: input.attachments, historyFrom, contextTokens: input.contextTokens, exchange: input.exchange });
    }
    usage = addUsage(usage, reply.usage);
    if (reply.text) said.push(reply.text);
    usageEstimated ||= reply.usageEstimated === true;
    historyOmitted = Math.max(historyOmitted, reply.historyOmitted ?? 0);
    model = reply.model;
    return reply;
  };

  /** One tool call: its result for the model, or the failure that ends the run. */
  async function useTool(call: ToolCall): Promise<string | Failure> {
    toolNames.push(call.name);
    const mcp = offeredMcp.get(call.name);
    const tool = mcp ? undefined : findTool(input.agent.config, call.name);
    const event = { id: input.runId, call_id: call.id, tool: call.name };
    if (!tool && !mcp) return `No tool named ${call.name} is available.`;
    const waited = waiting.get(call.id);
    if (waited?.outcome && waited.outcome.status !== 'approved') {
      if (waited.outcome.status === 'answered') return waited.answer!.output!.slice(0, MAX_ACTION_OUTPUT_CHARS);
      return notMadeResult(waited.outcome.status === 'denied' ? 'denied' : 'expired', waited.outcome.reason);
    }
    if (tool?.type === 'handoff') {
      await emitRunEvent(input.runId, 'response.tool.started', event);
      handoff = { reason: handoffReason(call.arguments) };
      await emitRunEvent(input.runId, 'response.tool.completed', event);
      return 'Handed off to a person.';
    }
    // Every client tool's call was answered (or denied) above: from here on the tool is the service's.
    if (tool?.runs_on === 'client') return `No tool named ${call.name} is available.`;
    try {
      if (mcp) return await callMcpTool({ runId: input.runId, deadline, workspaceId: input.workspace.id, callId: call.id, name: call.name, ...mcp, arguments: call.arguments });
      return await callTool({ runId: input.runId, deadline, workspacePublicId: input.workspace.publicId, callId: call.id, tool: tool!, arguments: call.arguments });
    } catch (err) {
      if (isCancellation(err)) throw err;
      // Running out of timeout_ms ends the run, whatever the tool policy.
      if (err instanceof DeadlinePassed || ranOutOfTime(err) || deadline.at <= Date.now()) throw new DeadlinePassed();
      const message = failureOf(err, deadline).message;
      await emitRunEvent(input.runId, 'response.tool.failed', { ...event, error: message });
      if (policy === 'required') return { code: 'tool_execution_failed', message };
      return `The tool failed: ${message}`;
    }
  }

  /**
   * The tools of the agent's MCP servers, before any model call: each server's allowed tools are
   * offered. One that cannot be reached fails the run under `required`; under `auto` its tools are
   * left out, and the stream says so (response.tool.failed, naming the server).
   */
  async function discover(): Promise<Failure | undefined> {
    let listings;
    try {
      listings = await discoverMcpTools({ workspaceId: input.workspace.id, deadline, servers: mcpServers });
    } catch (err) {
      if (isCancellation(err)) throw err;
      if (err instanceof DeadlinePassed || ranOutOfTime(err) || deadline.at <= Date.now()) throw new DeadlinePassed();
      // The listing itself failed (its attempts timed out): every server is as unreachable.
      const message = `MCP servers could not be listed: ${failureOf(err, deadline).message}`;
      listings = mcpServers.map((s) => ({ label: s.server_label, error: message }));
    }
    for (const listing of listings) {
      if ('error' in listing) {
        if (policy === 'required') return { code: 'tool_execution_failed', message: listing.error };
        notices.push({ type: 'response.tool.failed', data: { id: input.runId, tool: listing.label, error: listing.error } });
        continue;
      }
      const server = mcpServers.find((s) => s.server_label === listing.label)!;
      // A name one of the agent's own tools has already stays the agent's own.
      for (const { tool, ...spec } of offeredMcpTools(server, listing.tools)) {
        if (tools.some((t) => t.name === spec.name)) continue;
        tools.push(spec);
        offeredMcp.set(spec.name, { server, tool });
      }
    }
    return undefined;
  }

  /** The agent's knowledge for this input, before any model call; a failure when the run cannot go without it. */
  async function retrieve(): Promise<Failure | undefined> {
    const unavailable: Failure = { code: 'knowledge_unavailable', message: 'Knowledge retrieval is unavailable, and the run does not answer without it.' };
    // Runs that began before retrieval existed carry on without it (their histories have no such step).
    if (!patched(RETRIEVAL_PATCH)) return undefined;
    if (knowledge.collections.length === 0) {
      return knowledge.required ? { ...unavailable, message: 'The agent has no knowledge to retrieve from, and the request requires retrieval.' } : undefined;
    }
    try {
      passages = await retrieveKnowledge({
        workspaceId: input.workspace.id,
        collections: knowledge.collections,
        query: retrievalQuery(input.input),
        resourceId: input.resourceId,
        required: knowledge.required,
        deadlineAt: deadline.at,
      });
      return undefined;
    } catch (err) {
      if (isCancellation(err) || err instanceof DeadlinePassed || ranOutOfTime(err)) throw err;
      const failure = failureOf(err, deadline);
      // An outage of ours that outlasted the deadline says so (and is not charged).
      return failure.code === 'knowledge_unavailable' || failure.code === 'service_unavailable' ? failure : unavailable;
    }
  }

  // A queued turn that settles before its turn came (cancelled, or given up) leaves no message.
  let hadTurn = false;
  /**
   * queued, behind earlier turns of the conversation: waits until none is open. Woken by each one's
   * end (turnEnded), and looks again every TURN_RECHECK_MS whatever happens; gives up after
   * TURN_WAIT_LIMIT_MS. The run's timeout_ms starts when its turn does.
   */
  async function awaitTurn(turn: TurnRef): Promise<Failure | undefined> {
    let woken = false;
    setHandler(turnEnded, () => void (woken = true));
    const since = Date.now();
    for (;;) {
      // Cleared before the look, so an end signalled during it is not missed.
      woken = false;
      if (await turnIsNext(turn)) break;
      const left = since + TURN_WAIT_LIMIT_MS - Date.now();
      if (left <= 0) return { code: 'conversation_busy', message: `The earlier turns of this conversation did not end within ${TURN_WAIT_LIMIT_MS / 60_000} minutes.` };
      await condition(() => woken, Math.min(TURN_RECHECK_MS, left));
    }
    deadline.at = Date.now() + input.options.timeoutMs;
    hadTurn = true;
    return undefined;
  }

  /**
   * running, waiting for people: the calls of this round that need an approval or the caller's output
   * are recorded (required_action) and each waits for its answer (answerAction) until the agent's
   * action timeout, then is denied. The wait is not part of timeout_ms: the deadline moves by it.
   */
  async function awaitPeople(round: number, toolCalls: ToolCall[]): Promise<void> {
    waiting.clear();
    const expiresAt = Date.now() + actionTimeoutMs(input.agent.config);
    const required: RequiredCall[] = [];
    for (const call of toolCalls) {
      const mcp = offeredMcp.get(call.name);
      const tool = mcp ? undefined : findTool(input.agent.config, call.name);
      const type = mcp ? (mcpApprovalRequired(mcp.server, mcp.tool) ? 'approval' : undefined) : tool && actionOf(tool);
      if (!type) continue;
      waiting.set(call.id, { type, round, expiresAt });
      // The arguments go with every call: an approver sees what it approves, a client runs them.
      required.push({ call_id: call.id, type, tool: call.name, arguments: call.arguments, expires_at: new Date(expiresAt).toISOString() });
    }
    if (required.length === 0) return;
    const since = Date.now();
    const hashes = await requireActions({ input, round, calls: required, callsMade: calls, consumed: creditsFor(usage), ...(extraPerCall > 0 && { extraPerCall }) });
    for (const [callId, sha256] of Object.entries(hashes ?? {})) waiting.get(callId)!.argumentsSha256 = sha256;
    await Promise.all(
      required.map(async ({ call_id, tool }) => {
        const call = waiting.get(call_id)!;
        const close = async (status: Exclude<ActionStatus, 'pending'>, reason?: string) => {
          call.closing = true;
          call.outcome = await CancellationScope.nonCancellable(() => closeAction({ runId: input.runId, round, callId: call_id, tool, status, ...(reason !== undefined && { reason }) }));
        };
        let answered;
        try {
          answered = await condition(() => call.answer !== undefined, expiresAt - Date.now());
        } catch (err) {
          // Cancelled while waiting: the call is closed too (its arguments go), and an answer accepted meanwhile is told so.
          if (isCancellation(err)) await close('cancelled');
          throw err;
        }
        const answer = answered ? call.answer! : undefined;
        await close(!answer ? 'expired' : answer.output !== undefined ? 'answered' : answer.decision === 'approve' ? 'approved' : 'denied', answer?.reason);
      }),
    );
    deadline.at += Date.now() - since;
  }

  /**
   * A round's results as the next calls send them: whole when the hold covers them at a token a
   * character (raised from the balance when it did not), else cut to what it covers, so the run is
   * charged all it consumes.
   */
  async function heldFor(results: string[]): Promise<string[]> {
    const excess = toolRoundExcess(results);
    if (excess === 0 || !patched(TOOL_RESULTS_HOLD_PATCH)) return results;
    const cost = costInputOf({ ...input, config: input.agent.config });
    // A run that holds its budget (max_run_credits) is charged no more whatever it sends: it ends at the budget instead.
    if (input.limits?.max_run_credits !== undefined && maxRunCost(cost) === input.limits.max_run_credits) return results;
    const credits = excess * callsLeft(cost, calls);
    if (!(await holdForToolResults({ runId: input.runId, credits }))) return fitToolResults(results, TOOL_RESULT_TOKENS);
    // Kept when the hold is lowered for a wait for people.
    extraPerCall += excess;
    return results;
  }

  /**
   * The limit the run has reached before its next model call, if any (its budgets: domain/limits.ts).
   * Runs begun before limits had none but MAX_TOOL_ROUNDS.
   */
  const spending = () => ({ calls, credits: creditsFor(usage), outputTokens: usage.output_tokens });
  const spent = (): LimitReason | undefined => {
    const reason = spentBeforeCall(limits, spending());
    return reason && patched(LIMITS_PATCH) ? reason : undefined;
  };
  /** The run ends at a limit, completed and incomplete: what the model said so far is its output, and no other call is made. */
  const stopAt = (reason: LimitReason): OutputItem[] => {
    incomplete = reason;
    return said.length > 0 ? [{ type: 'text', text: said.join('\n\n') }] : [];
  };

  async function respond(): Promise<OutputItem[] | Failure> {
    // A step the run has no part in is not entered: each promise made in a workflow costs the worker a
    // stack trace (Temporal keeps one per promise for the UI's stack query; docs/performance.md).
    const waited = input.turn && (await awaitTurn(input.turn));
    if (waited) return waited;
    const refused = (knowledge.collections.length > 0 || knowledge.required) && (await retrieve());
    if (refused) return refused;
    const unreachable = mcpServers.length > 0 && (await discover());
    if (unreachable) return unreachable;
    let reply = await ask();
    for (let round = 0; reply.toolCalls.length > 0; round++) {
      if (round === MAX_TOOL_ROUNDS && !patched(LIMITS_PATCH)) return { code: 'tool_execution_failed', message: `The agent did not answer within ${MAX_TOOL_ROUNDS} tool rounds.` };
      // A reply whose calls would pass max_tool_calls ends the run there, and so does one whose results no
      // model call could read (a limit is spent): none of its calls is made (docs/api.md, "Budgets and limits").
      const reached = passesToolLimit(limits, toolCallsMade, reply.toolCalls.length) ? 'max_tool_calls' : spentBeforeCall(limits, spending());
      if (reached && patched(LIMITS_PATCH)) return stopAt(reached);
      toolTurns.push({ role: 'assistant', content: reply.text || null, tool_calls: reply.toolCalls });
      await awaitPeople(round, reply.toolCalls);
      // The calls of one reply run at once, each its own activity; their results go back in the model's order.
      const results: (string | Failure)[] = patched(PARALLEL_TOOLS_PATCH) ? await Promise.all(reply.toolCalls.map(useTool)) : await oneAfterAnother(reply.toolCalls, useTool);
      toolCallsMade += reply.toolCalls.length;
      const failure = results.find((result): result is Failure => typeof result !== 'string');
      if (failure) return failure;
      for (const [i, result] of (await heldFor(results as string[])).entries()) toolTurns.push({ role: 'tool', content: result, tool_call_id: reply.toolCalls[i].id });
      if (handoff) return [...(reply.text ? [{ type: 'text' as const, text: reply.text }] : []), { type: 'handoff', text: handoff.reason }];
      reply = await ask();
    }
    for (let repair = 0; !reply.check.ok && repair < REPAIR_ATTEMPTS; repair++) {
      const reached = spent();
      if (reached) return stopAt(reached);
      reply = await ask({ previous: reply.text, problems: reply.check.problems });
    }
    if (!reply.check.ok) {
      return { code: 'structured_output_failed', message: `The reply did not match the schema at: ${reply.check.paths.join(', ')}` };
    }
    // No tool calls are left and the reply passed: final.
    if (reply.truncated) incomplete = 'max_output_tokens';
    return finalOutput(reply, format)!;
  }

  const settle = async (status: 'completed' | 'failed' | 'cancelled' | 'blocked', output: OutputItem[], error?: Failure) => {
    if (cancelRecorded) await cancelRecorded;
    return CancellationScope.nonCancellable(() =>
      settleRun({ input, status, output, usage, usageEstimated, historyOmitted, incomplete, model, toolNames, handoff, error, knowledge: passageRefs(), ...(input.turn && { turnNeverCame: !hadTurn }) }),
    );
  };

  try {
    const result = await respond();
    if (settled) {
      if (cancelRecorded) await cancelRecorded;
      return settled;
    }
    if (CancellationScope.current().consideredCancelled) return await settle('cancelled', []);
    if (Array.isArray(result)) return await settle('completed', result);
    return await settle(ERROR_TABLE[result.code].runStatus, [], result);
  } catch (err) {
    if (isCancellation(err) && CancellationScope.current().consideredCancelled) return await settle('cancelled', []);
    const failure = err instanceof DeadlinePassed ? timedOut(deadline) : failureOf(err, deadline);
    return await settle(ERROR_TABLE[failure.code].runStatus, [], failure);
  }
}
