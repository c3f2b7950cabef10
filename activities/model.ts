import { ApplicationFailure, Context } from '@temporalio/activity';
import { Op } from 'sequelize';
import type { AgentConfig } from '../domain/agents';
import { checkStructured, type StructuredCheck } from '../domain/structuredOutput';
import type { Attachment, OutputItem, ResponseFormat, Usage } from '../domain/runs';
import { Message, models } from '../db/models';
import { assemblePrompt, userContent } from './prompt';
import { modelProvider } from './providers';
import { ProviderError, type ChatMessage } from './providers/types';

export interface GenerateInput {
  runId: string;
  config: AgentConfig;
  input: string | Record<string, unknown>;
  attachments: Attachment[];
  /** Earlier turns are read from this conversation when memory applies. */
  historyFrom?: { conversationId: number; beforeRunKey: number };
  format: ResponseFormat;
  repair?: { previous: string; problems: string[] };
}

export interface GenerateResult {
  text: string;
  usage: Usage;
  model: string;
  check: StructuredCheck;
}

const HEARTBEAT_MS = 1000;
const DEFAULT_HISTORY = 20;

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return (content as OutputItem[]).map((item) => (item.type === 'json' ? JSON.stringify(item.json) : item.text)).join('\n');
  }
  return JSON.stringify(content);
}

async function loadHistory(input: GenerateInput): Promise<ChatMessage[]> {
  if (!input.historyFrom || input.config.memory?.enabled === false) return [];
  models();
  const rows = await Message.findAll({
    where: { conversationId: input.historyFrom.conversationId, runId: { [Op.ne]: input.historyFrom.beforeRunKey } },
    order: [['id', 'DESC']],
    limit: input.config.memory?.max_messages ?? DEFAULT_HISTORY,
  });
  return rows.reverse().map((m): ChatMessage =>
    m.role === 'user'
      ? { role: 'user', content: userContent(m.content as string | Record<string, unknown>, []) }
      : { role: 'assistant', content: textOf(m.content) },
  );
}

/**
 * One model call. The activity heartbeats so a cancelled run (client gone, cancel endpoint, timeout)
 * reaches it and aborts the provider request; provider failures become typed failures whose
 * retryability the declared retry policy honours.
 */
export async function generate(input: GenerateInput): Promise<GenerateResult> {
  const ctx = Context.current();
  const timer = setInterval(() => ctx.heartbeat(), HEARTBEAT_MS);
  try {
    const messages = assemblePrompt({ config: input.config, input: input.input, attachments: input.attachments, history: await loadHistory(input), format: input.format, repair: input.repair });
    const reply = await modelProvider().complete({
      model: input.config.model ?? 'default',
      messages,
      temperature: input.config.temperature,
      maxOutputTokens: input.config.max_output_tokens,
      json: input.format.type !== 'text',
      signal: ctx.cancellationSignal,
    });
    return { text: reply.text, usage: reply.usage, model: reply.model, check: checkStructured(reply.text, input.format) };
  } catch (err) {
    if (err instanceof ProviderError) {
      throw ApplicationFailure.create({ message: err.message, type: 'provider_unavailable', nonRetryable: !err.retryable });
    }
    throw err;
  } finally {
    clearInterval(timer);
  }
}
