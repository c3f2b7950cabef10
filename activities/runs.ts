import { ApplicationFailure, Context, log } from '@temporalio/activity';
import type { ErrorCode, RunStatus } from '../domain/errors';
import { mintId } from '../domain/ids';
import { STREAM_VERSION, terminalEvent, type StreamEventType } from '../domain/streamEvents';
import { conversational, finalOutput, TERMINAL_STATUSES, toRunResponse, type OutputItem, type RunInput, type RunOutcome, type RunResponse } from '../domain/runs';
import { type IncompleteReason } from '../domain/runResponse';
import { addUsage, ZERO_USAGE, type Usage } from '../domain/usage';
import { creditsFor, ledgerLine, serviceFault } from '../domain/billing';
import { conversationById, openConversation, type ConversationRecord } from '../db/conversations';
import { Outbox } from '../db/outbox';
import { insertMessage } from '../db/messages';
import { insertRun, lockRun, recordRunWithOwnConversation, settleRunRecord, type LockedRun, type NewRun } from '../db/runs';
import { recordCancelRequest } from '../db/runCancelRequests';
import { transaction, type Sql } from '../db/sql';
import { config } from '../infra/config';
import { postgresDataError } from '../infra/dependencyErrors';
import { logger } from '../infra/logger';
import { heartbeating } from './bounded';
import { callModel, recordStartLag, type GenerateInput, type GenerateResult } from './model';
import { RunEvents } from './runEvents';
import { untilAvailable } from './untilAvailable';
import { wakeNextTurn } from './turns';
import type { PassageRef } from '../domain/knowledge';

export interface BegunRun {
  runKey: number;
  conversationId: number;
  conversationPublicId?: string;
  conversationChannel: string;
}

export const outboxOf = (input: RunInput) => new Outbox(input.workspace, { requestId: input.requestId, traceId: input.traceId, jobId: input.jobId, scheduleId: input.scheduleId });

async function writeMessage(on: Sql, outbox: Outbox, m: { conversation: { id: number; publicId?: string }; runKey: number; role: 'user' | 'assistant'; content: unknown }): Promise<void> {
  const id = await insertMessage({ conversationId: m.conversation.id, runKey: m.runKey, role: m.role, content: m.content }, on);
  outbox.add(m.role === 'user' ? 'message.received' : 'message.sent', { id, conversation: m.conversation.publicId, role: m.role });
}

/** The run's row as it begins, less its conversation. */
function newRun(input: RunInput): Omit<NewRun, 'conversationId'> {
  return {
    publicId: input.runId,
    workspaceId: input.workspace.id,
    agentId: input.agent.id,
    agentVersion: input.agent.version,
    kind: input.kind,
    channel: input.channel,
    requestId: input.requestId,
    traceId: input.traceId,
    metadata: input.metadata,
    resourceId: input.resourceId ?? null,
  };
}

/**
 * queued → running inside the caller's transaction: the run, its conversation and the caller's
 * message (unless `withoutMessage`), with their events. Finds (and locks) the run instead when it
 * is already recorded.
 */
async function recordRun(sql: Sql, input: RunInput, withoutMessage = false): Promise<{ begun: BegunRun; row?: LockedRun }> {
  const row = await lockRun(input.runId, sql);
  if (row) return { begun: begunRun(row.runKey, { id: row.conversationId, publicId: row.conversationPublicId, internal: row.internal, channel: row.conversationChannel }), row };
  const outbox = outboxOf(input);
  const conversation = input.conversation
    ? await conversationById(input.conversation.id, sql)
    : (await openConversation({ workspace: input.workspace, agent: input.agent, channel: input.channel, externalRef: input.externalRef, internal: !conversational(input.kind) }, outbox, sql)).conversation;
  const runKey = await insertRun({ ...newRun(input), conversationId: conversation.id }, sql);
  if (conversational(input.kind) && !withoutMessage) await writeMessage(sql, outbox, { conversation, runKey, role: 'user', content: input.input });
  outbox.add('agent.run.started', { id: input.runId, agent: input.agent.publicId, agent_version: input.agent.version, status: 'running' });
  await outbox.write(sql);
  return { begun: begunRun(runKey, conversation) };
}

/**
 * queued → running in one statement, for the common case that needs no more: a run with an internal
 * conversation of its own, of a workspace no partner's endpoint hears (no events to write with it),
 * not recorded before. Undefined otherwise: recordRun, in a transaction, does the rest.
 */
async function recordedAlone(input: RunInput): Promise<{ begun: BegunRun; row?: undefined } | undefined> {
  if (conversational(input.kind) || input.conversation || input.workspace.partnerPublicId !== null) return undefined;
  const recorded = await recordRunWithOwnConversation(newRun(input));
  return recorded && { begun: begunRun(recorded.runKey, { id: recorded.conversationId, internal: true, publicId: '', channel: input.channel }) };
}

/** response.started on the run's stream, announced by whichever step recorded the run. */
function announceStart(stream: RunEvents, input: RunInput, begun: BegunRun): void {
  const { output, usage, ...started } = runResponse(input, begun, { status: 'running', output: [], usage: ZERO_USAGE });
  stream.emit('response.started', { ...started, stream_version: STREAM_VERSION });
}

/**
 * queued → running, in one statement where that is all it takes or else in one transaction, and
 * response.started on the run's stream. Safe to repeat: a
 * second call finds the run and changes nothing; it announces the run only if the attempt that
 * recorded it died before announcing it.
 */
export async function beginRun(input: RunInput): Promise<BegunRun> {
  const { begun, row } = (await recordedAlone(input)) ?? (await transaction((sql) => recordRun(sql, input)));
  const stream = new RunEvents(input.runId);
  if (!row || !(await stream.startsWith('response.started'))) {
    announceStart(stream, input, begun);
    await stream.flush();
  }
  return begun;
}

export interface StartRun {
  run: RunInput;
  /** Whether the conversation's earlier turns go to the model (memory applies). */
  memory: boolean;
  /** The first model call, less what the run already says. */
  call: Omit<GenerateInput, 'runId' | 'traceId' | 'config' | 'input' | 'attachments' | 'historyFrom' | 'contextTokens' | 'exchange'>;
  /** When the reply ends the run, settle it here (completed): what retrieval gave the model. Absent in runs begun before. */
  settle?: { knowledge: PassageRef[] };
  /** Events of what the run found before it began (an MCP server it could not reach), written after response.started. */
  notices?: { type: StreamEventType; data: unknown }[];
}

export type StartedRun = GenerateResult & { begun: BegunRun; settled?: RunOutcome };

/**
 * The run's first activity: queued → running (beginRun), its first model call, and, when that reply
 * ends the run (most runs: no tools, no repair), running → completed (settleRun). Doing the
 * bookkeeping inside the call rather than in local activities of their own spares every run a
 * workflow activation and a local-activity round trip for each: a plain run's history is the floor's,
 * one activity and two workflow tasks. It heartbeats while it runs, bookkeeping included. A retried
 * attempt finds the run recorded and calls again; one whose earlier attempt settled the run answers with that.
 */
export function startRun(s: StartRun): Promise<StartedRun> {
  recordStartLag(Context.current());
  return heartbeating(async () => {
    // Before the call nothing is lost by waiting: a database failover is waited out within the run's deadline.
    const begun = await untilAvailable(() => beginRun(s.run), s.call.deadline.at);
    if (s.notices?.length && Context.current().info.attempt === 1) {
      const stream = new RunEvents(s.run.runId);
      for (const notice of s.notices) stream.emit(notice.type, notice.data);
      await stream.flush();
    }
    const earlier = s.settle && Context.current().info.attempt > 1 ? await new RunEvents(s.run.runId).completedRun() : undefined;
    // The workflow returns `settled` and reads nothing else of the reply.
    if (earlier) return { text: '', toolCalls: [], usage: ZERO_USAGE, model: '', check: { ok: true, value: '' }, begun, settled: { run: earlier } };
    const reply = await callModel({
      ...s.call,
      runId: s.run.runId,
      traceId: s.run.traceId,
      config: s.run.agent.config,
      input: s.run.input,
      attachments: s.run.attachments,
      historyFrom: s.memory ? { conversationId: begun.conversationId, beforeRunKey: begun.runKey } : undefined,
      contextTokens: s.run.contextTokens,
      exchange: s.run.exchange,
    });
    const output = s.settle && finalOutput(reply, s.call.format);
    if (!output) return { ...reply, begun };
    try {
      const settled = await settleRun({ input: s.run, status: 'completed', output, usage: reply.usage, usageEstimated: reply.usageEstimated, historyOmitted: reply.historyOmitted, ...(reply.truncated && { incomplete: 'max_output_tokens' as const }), model: reply.model, toolNames: [], knowledge: s.settle?.knowledge, unlessCancelRequested: true });
      return { ...reply, begun, settled };
    } catch (err) {
      // The run was cancelled before the reply came: the workflow settles it cancelled. Any other
      // failure to settle (the database gone) must not throw the reply away, or a retry would ask the
      // provider again: the reply goes back in the activity's result, and the workflow settles the run
      // with it (its settleRun retries until the database is back).
      if (!(err instanceof CancelRequested)) log.warn('settling in the first call failed: the workflow settles the run with its reply', { runId: s.run.runId, error: String(err) });
      return { ...reply, begun };
    }
  });
}

function begunRun(runKey: number, conversation: Pick<ConversationRecord, 'id' | 'publicId' | 'internal' | 'channel'>): BegunRun {
  return {
    runKey,
    conversationId: conversation.id,
    conversationPublicId: conversation.internal ? undefined : conversation.publicId,
    conversationChannel: conversation.channel,
  };
}

export interface Settlement {
  input: RunInput;
  status: Exclude<RunStatus, 'queued' | 'running'>;
  output: OutputItem[];
  usage: Usage;
  model: string;
  toolNames: string[];
  /** The assistant stopped for a person: handoff.requested is written with the settlement. */
  handoff?: { reason: string };
  error?: { code: ErrorCode; message: string };
  /** What retrieval gave the model (ids and ranks, never text), for the run's log entry. */
  knowledge?: PassageRef[];
  /** Settle only if no cancel was recorded for the run first (the first call settling it); else CancelRequested. */
  unlessCancelRequested?: boolean;
  /** Some call's usage was counted by the service, its provider having reported none. */
  usageEstimated?: boolean;
  /** The most earlier messages any call of the run left out to fit the model's window (GenerateResult.historyOmitted). */
  historyOmitted?: number;
  /** The answer stopped at its output cap (GenerateResult.truncated of the reply that became the output). */
  incomplete?: IncompleteReason;
  /** The reconciler settles the run: its workflow ended without settling it. */
  reconciled?: boolean;
  /** A queued turn settles before its turn came (cancelled or given up in the queue): its message is not part of the conversation. */
  turnNeverCame?: boolean;
  /** The settlement asked for could not be stored (unstoredSettlement): the run fails, charged nothing, whoever settles it. */
  unstored?: boolean;
}

/** A settlement asked to give way to a cancel found one recorded: nothing was written. */
class CancelRequested extends Error {}

/**
 * The run's workflow was cancelled: recorded at once (a local activity), so a first call still in
 * flight settles the run only if its settlement looks first.
 */
export async function recordRunCancel(runId: string): Promise<void> {
  await transaction((sql) => recordCancelRequest(runId, sql));
}

export function runResponse(input: RunInput, begun: BegunRun, fields: { status: RunStatus; output: OutputItem[]; usage: Usage; incomplete?: IncompleteReason }): RunResponse {
  return toRunResponse({
    id: input.runId,
    status: fields.status,
    agent: input.agent.publicId,
    agentVersion: input.agent.version,
    conversation: begun.conversationPublicId,
    output: fields.output,
    usage: fields.usage,
    metadata: input.metadata,
    requestId: input.requestId,
    traceId: input.traceId,
    incompleteReason: fields.status === 'completed' ? fields.incomplete : undefined,
  });
}

/**
 * running → completed | failed | cancelled | blocked, exactly once (settleOnce). A settlement the
 * database refuses for what it holds (a data error: postgresDataError) would be refused as long as it
 * is retried, holding the run's credits and its conversation's turn: the run fails at once instead,
 * as internal_error, charged nothing, and it is logged at error level. Only what can pass on retry (a
 * dependency's outage) is thrown for the caller to retry; a failure of the failed settlement too is
 * final (non-retryable), and the reconciler settles the run.
 */
export async function settleRun(s: Settlement): Promise<RunOutcome> {
  try {
    return await settleOnce(s);
  } catch (err) {
    const sqlstate = postgresDataError(err);
    if (!sqlstate) throw err;
    // The error's message only: its detail may quote what was written (the model's words).
    const about = { run_id: s.input.runId, sqlstate, err: (err as Error).message, status: s.status, error_code: s.error?.code, usage: s.usage, model: s.model };
    logger.error(about, "the run's settlement could not be stored: the run fails as internal_error, charged nothing");
    try {
      return await settleOnce(unstoredSettlement(s));
    } catch (again) {
      const code = postgresDataError(again);
      if (!code) throw again;
      logger.error({ ...about, sqlstate: code, err: (again as Error).message }, 'not even the failed settlement could be stored: the reconciler settles the run');
      throw ApplicationFailure.create({ type: 'internal_error', message: `The run could not be settled (SQLSTATE ${code}).`, nonRetryable: true });
    }
  }
}

/**
 * The settlement that replaces one the database refused: failed, internal_error, nothing of the
 * reply (its output, usage, handoff), so nothing the database refused is written again.
 */
function unstoredSettlement(s: Settlement): Settlement {
  return {
    input: s.input,
    status: 'failed',
    output: [],
    usage: ZERO_USAGE,
    model: s.model,
    toolNames: s.toolNames,
    error: { code: 'internal_error', message: 'The run failed inside the service: its result could not be stored.' },
    knowledge: s.knowledge,
    unlessCancelRequested: s.unlessCancelRequested,
    reconciled: s.reconciled,
    turnNeverCame: s.turnNeverCame,
    unstored: true,
  };
}

/**
 * The settlement's writes: the final status, the ledger line, the balance, the assistant message, the
 * log entry and every event commit together (inside the transaction: the run locked, one settling
 * statement, the message when there is one, the events). A repeated call (a retried activity) finds
 * the run already settled and returns what was stored.
 */
async function settleOnce(s: Settlement): Promise<RunOutcome> {
  const { input } = s;
  const { outcome, begun, recorded, now } = await transaction(async (sql) => {
    // A run whose first call failed before recording it (or was cancelled first) is recorded now, so every path settles.
    const recordedRun = await recordRun(sql, input, s.turnNeverCame === true);
    const { begun, row = { status: 'running', usage: ZERO_USAGE, consumedUsage: null } } = recordedRun;
    const settled = (outcome: RunOutcome, now: boolean) => ({ outcome, begun, recorded: !recordedRun.row, now });
    if (TERMINAL_STATUSES.has(row.status)) return settled({ run: runResponse(input, begun, { ...s, status: row.status, usage: row.usage }), ...(s.error && { error: s.error }) }, false);
    // Calls cut short reported no usage; what they consumed was recorded on the run and is billed too.
    const usage = row.consumedUsage ? addUsage(s.usage, row.consumedUsage) : s.usage;
    const outbox = outboxOf(input);
    const credits = creditsFor(usage);
    const balance = await settleRunRecord(
      {
        workspaceId: input.workspace.id,
        runKey: begun.runKey,
        runId: input.runId,
        status: s.status,
        // Stateless responses keep a record of the request and its cost, not of the exchange.
        output: input.kind === 'response' ? null : s.output,
        usage,
        error: s.error ?? null,
        line: ledgerLine(input.channel, begun.conversationChannel),
        credits,
        logId: mintId('log'),
        latencyMs: Math.max(0, Date.now() - input.acceptedAt),
        model: s.model,
        toolNames: s.toolNames,
        knowledge: s.knowledge ?? [],
        // Under the run's lock, which recording a cancel takes too: one of the two comes first.
        unlessCancelRequested: s.unlessCancelRequested ?? false,
        refused: s.output.some((item) => item.type === 'refusal'),
        usageEstimated: s.usageEstimated ?? false,
        historyOmitted: s.historyOmitted ?? 0,
        incompleteReason: s.status === 'completed' ? (s.incomplete ?? null) : null,
        reconciled: s.reconciled ?? false,
        // A run the reconciler settles (terminated, timed out) is billed for what its calls consumed, as before.
        waived: s.unstored === true || (serviceFault(s.error?.code) && s.reconciled !== true),
      },
      sql,
    );
    if (!balance) throw new CancelRequested();
    const threshold = balance.usageThreshold;
    if (balance.charged > 0 && threshold !== null && balance.credits + balance.charged > threshold && balance.credits <= threshold) {
      outbox.add('usage.threshold_reached', { workspace: input.workspace.publicId, balance: balance.credits, threshold });
    }
    if (s.status === 'completed' && conversational(input.kind)) {
      await writeMessage(sql, outbox, { conversation: { id: begun.conversationId, publicId: begun.conversationPublicId }, runKey: begun.runKey, role: 'assistant', content: s.output });
    }
    if (s.handoff) {
      // The reason is the model's words: a stateless run keeps no copy of its exchange, there either.
      outbox.add('handoff.requested', { run: input.runId, conversation: begun.conversationPublicId ?? null, agent: input.agent.publicId, ...(input.kind !== 'response' && { reason: s.handoff.reason }) });
    }
    outbox.add(s.status === 'completed' ? 'agent.run.completed' : 'agent.run.failed', {
      id: input.runId,
      agent: input.agent.publicId,
      agent_version: input.agent.version,
      status: s.status,
      usage,
      ...(s.error && { error_code: s.error.code }),
      // The refusal's words are the model's: a stateless run keeps no copy of its exchange, there either.
      ...refusedIn(s.output, input.kind !== 'response'),
    });
    await outbox.write(sql);
    return settled({ run: runResponse(input, begun, { ...s, usage }), ...(s.error && { error: s.error }) }, true);
  });
  const stream = new RunEvents(input.runId);
  // A repeated call leaves the stream alone: it has its one terminal event, or, when the call that
  // settled died before writing it, the API derives it from the outcome, which is announced again
  // (a listener takes the first announcement it hears).
  if (now) {
    // The run was never announced when it is recorded only now: a stream still starts with response.started.
    if (recorded) announceStart(stream, input, begun);
    const terminal = terminalEvent(outcome);
    stream.emit(terminal.type, terminal.data);
  }
  stream.announceSettlement(outcome);
  // A stateless run's stream is the last copy of its exchange: it goes soon after the end, once
  // clients have had the time to read or resume it.
  if (now && input.kind === 'response') stream.expireIn(config().statelessStreamTtlS);
  await stream.flush();
  // A message's turn has ended, the reconciler's settlements included: told once the answer is out
  // (a repeated call tells again, in case the first died before telling).
  if (input.kind === 'message') await wakeNextTurn(begun.conversationId);
  return outcome;
}

/** What agent.run.completed says of a refusal: that there was one, and (unless the run is stateless) the model's explanation. */
function refusedIn(output: OutputItem[], keepWords: boolean): { refused?: true; refusal?: string } {
  const refusal = output.find((item) => item.type === 'refusal');
  return refusal ? { refused: true, ...(keepWords && { refusal: refusal.refusal }) } : {};
}
