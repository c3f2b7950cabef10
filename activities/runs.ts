import { QueryTypes, type Transaction } from 'sequelize';
import type { ErrorCode, RunStatus } from '../domain/errors';
import { mintId } from '../domain/ids';
import { STREAM_VERSION, terminalEvent } from '../domain/streamEvents';
import { addUsage, creditsFor, ledgerLine, TERMINAL_STATUSES, toRunResponse, ZERO_USAGE, type OutputItem, type RunInput, type RunOutcome, type RunResponse, type Usage } from '../domain/runs';
import { Conversation, LedgerLine, Message, models, Run, RunLog } from '../db/models';
import { db } from '../db/sequelize';
import { openConversation } from '../db/conversations';
import { recordEvent, type Correlation } from '../db/outbox';
import { RunEvents } from './runEvents';

export interface BegunRun {
  runKey: number;
  conversationId: number;
  conversationPublicId?: string;
  conversationChannel: string;
}

function correlation(input: RunInput): Correlation {
  return { requestId: input.requestId, traceId: input.traceId };
}

/**
 * queued → running: records the run, its conversation and the caller's message, with their events,
 * in one transaction. Safe to repeat: a second call finds the run and changes nothing.
 */
export async function beginRun(input: RunInput): Promise<BegunRun> {
  models();
  const begun = await db().transaction(async (t): Promise<BegunRun> => {
    const existing = await Run.findOne({ where: { publicId: input.runId }, transaction: t });
    if (existing) {
      const conversation = (await Conversation.findByPk(existing.conversationId!, { transaction: t }))!;
      return begunRun(existing.id, conversation);
    }
    const events = correlation(input);
    const { conversation } = input.conversation
      ? { conversation: (await Conversation.findByPk(input.conversation.id, { transaction: t }))! }
      : await openConversation(t, { workspace: input.workspace, agent: input.agent, channel: input.channel, externalRef: input.externalRef, internal: input.kind === 'response' }, events);
    const run = await Run.create(
      {
        publicId: input.runId,
        workspaceId: input.workspace.id,
        agentId: input.agent.id,
        agentVersion: input.agent.version,
        conversationId: conversation.id,
        kind: input.kind,
        status: 'running',
        channel: input.channel,
        requestId: input.requestId,
        traceId: input.traceId,
        metadata: input.metadata,
        resourceId: input.resourceId ?? null,
        startedAt: new Date(),
      },
      { transaction: t },
    );
    if (input.kind !== 'response') {
      const message = await Message.create({ publicId: mintId('message'), conversationId: conversation.id, runId: run.id, role: 'user', content: input.input }, { transaction: t });
      await recordEvent(t, input.workspace, 'message.received', { id: message.publicId, conversation: conversation.publicId, role: 'user' }, events);
    }
    await recordEvent(t, input.workspace, 'agent.run.started', { id: input.runId, agent: input.agent.publicId, agent_version: input.agent.version, status: 'running' }, events);
    return begunRun(run.id, conversation);
  });
  const stream = new RunEvents(input.runId);
  const { output, usage, ...started } = runResponse(input, begun, { status: 'running', output: [], usage: ZERO_USAGE });
  stream.emit('response.started', { ...started, stream_version: STREAM_VERSION });
  await stream.flush();
  return begun;
}

function begunRun(runKey: number, conversation: Conversation): BegunRun {
  return {
    runKey,
    conversationId: conversation.id,
    conversationPublicId: conversation.internal ? undefined : conversation.publicId,
    conversationChannel: conversation.channel,
  };
}

export interface Settlement {
  input: RunInput;
  begun: BegunRun;
  status: Exclude<RunStatus, 'queued' | 'running'>;
  output: OutputItem[];
  usage: Usage;
  model: string;
  toolNames: string[];
  /** The assistant stopped for a person: handoff.requested is written with the settlement. */
  handoff?: { reason: string };
  error?: { code: ErrorCode; message: string };
}

export function runResponse(input: RunInput, begun: BegunRun, fields: { status: RunStatus; output: OutputItem[]; usage: Usage }): RunResponse {
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
  });
}

/**
 * running → completed | failed | cancelled | blocked, exactly once: the final status, the ledger line,
 * the balance, the assistant message, the log entry and every event commit together. A repeated
 * call (a retried activity) finds the run already settled and returns what was stored.
 */
export async function settleRun(s: Settlement): Promise<RunOutcome> {
  models();
  const { input, begun } = s;
  let outcome: RunOutcome = { run: runResponse(input, begun, s), ...(s.error && { error: s.error }) };
  await db().transaction(async (t) => {
    const row = (await Run.findByPk(begun.runKey, { attributes: ['status', 'usage', 'consumedUsage'], transaction: t, lock: t.LOCK.UPDATE }))!;
    if (TERMINAL_STATUSES.has(row.status)) {
      outcome = { run: runResponse(input, begun, { ...s, status: row.status, usage: row.usage }), ...(s.error && { error: s.error }) };
      return;
    }
    // Calls cut short reported no usage; what they consumed was recorded on the run and is billed too.
    const usage = row.consumedUsage ? addUsage(s.usage, row.consumedUsage) : s.usage;
    outcome = { run: runResponse(input, begun, { ...s, usage }), ...(s.error && { error: s.error }) };
    await Run.update(
      {
        status: s.status,
        // Stateless responses keep a record of the request and its cost, not of the exchange.
        output: input.kind === 'response' ? null : s.output,
        usage,
        errorCode: s.error?.code ?? null,
        errorMessage: s.error?.message ?? null,
        completedAt: new Date(),
      },
      { where: { id: begun.runKey }, transaction: t },
    );
    const events = correlation(input);
    const credits = creditsFor(usage);
    await LedgerLine.create(
      { workspaceId: input.workspace.id, runId: begun.runKey, line: ledgerLine(input.channel, begun.conversationChannel), credits, inputTokens: usage.input_tokens, outputTokens: usage.output_tokens },
      { transaction: t },
    );
    if (credits > 0) await chargeCredits(input, credits, t, events);
    if (s.status === 'completed' && input.kind !== 'response') {
      const message = await Message.create({ publicId: mintId('message'), conversationId: begun.conversationId, runId: begun.runKey, role: 'assistant', content: s.output }, { transaction: t });
      await recordEvent(t, input.workspace, 'message.sent', { id: message.publicId, conversation: begun.conversationPublicId, role: 'assistant' }, events);
    }
    if (s.handoff) {
      await recordEvent(t, input.workspace, 'handoff.requested', { run: input.runId, conversation: begun.conversationPublicId ?? null, agent: input.agent.publicId, reason: s.handoff.reason }, events);
    }
    const runEvent = s.status === 'completed' ? 'agent.run.completed' : 'agent.run.failed';
    await recordEvent(t, input.workspace, runEvent, { id: input.runId, agent: input.agent.publicId, agent_version: input.agent.version, status: s.status, usage, ...(s.error && { error_code: s.error.code }) }, events);
    await RunLog.create(
      {
        publicId: mintId('log'),
        workspaceId: input.workspace.id,
        runId: begun.runKey,
        status: s.status,
        latencyMs: Math.max(0, Date.now() - input.acceptedAt),
        model: s.model,
        inputTokens: usage.input_tokens,
        outputTokens: usage.output_tokens,
        totalTokens: usage.total_tokens,
        cachedTokens: usage.cached_tokens,
        toolNames: s.toolNames,
        errorCode: s.error?.code ?? null,
      },
      { transaction: t },
    );
  });
  const stream = new RunEvents(input.runId);
  const terminal = terminalEvent(outcome);
  stream.emit(terminal.type, terminal.data);
  await stream.flush();
  return outcome;
}

/** Debits the balance and fires usage.threshold_reached when this debit crosses the threshold. */
async function chargeCredits(input: RunInput, credits: number, t: Transaction, events: Correlation): Promise<void> {
  const [row] = await db().query<{ credits: number; usage_threshold: number | null }>(
    'UPDATE workspaces SET credits = credits - :credits WHERE id = :id RETURNING credits, usage_threshold',
    { replacements: { credits, id: input.workspace.id }, type: QueryTypes.SELECT, transaction: t },
  );
  const threshold = row.usage_threshold;
  const before = row.credits + credits;
  if (threshold !== null && before > threshold && row.credits <= threshold) {
    await recordEvent(t, input.workspace, 'usage.threshold_reached', { workspace: input.workspace.publicId, balance: row.credits, threshold }, events);
  }
}
