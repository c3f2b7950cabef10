import { RUN_STATUSES, type ErrorCode, type RunStatus } from './errors';
import type { UsageShape } from './runResponse';
import { boolean, closed, integer, list, oneOfValues, orNull, publicId, ref, text, timestamp, type Static } from './shape';

/** One run's log entry as GET /api/v2/logs shows it: execution metadata, never transcript content. */
export interface LogView {
  public_id: string;
  run: string;
  agent: string;
  status: string;
  latency_ms: number;
  model: string;
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  cached_tokens: number;
  tool_names: string[];
  error_code: string | null;
  uncharged_credits: number;
  refused: boolean;
  usage_estimated: boolean;
  history_omitted: number;
  knowledge: { chunk: string; document: string; rank: number }[];
  created_at: Date;
}

/** The log entry: its shape, declared once for the view and the OpenAPI document. */
export const LogEntry = closed(
  {
    id: publicId('log'),
    run: publicId('run'),
    agent: text(),
    status: oneOfValues(RUN_STATUSES),
    latency_ms: integer({ minimum: 0 }),
    model: text(),
    usage: ref<Static<typeof UsageShape>>('Usage'),
    usage_estimated: boolean('The provider reported no usage: the service counted the tokens (a real tokenizer for known OpenAI models, else an estimate) and billed that.'),
    refused: boolean('The model refused: the run completed with a refusal output item.'),
    history_omitted: integer({
      minimum: 0,
      description: "Earlier messages of the conversation that memory would have sent but were left out, oldest first and whole turns at a time, to fit the model's context window (or the run's reservation). 0 for runs without memory.",
    }),
    tool_names: list(text()),
    error_code: orNull(ref<ErrorCode>('ErrorCode')),
    uncharged_credits: integer({
      minimum: 0,
      description: "Credits of the run's real cost above what it reserved, not charged: a run is never charged more than its reservation. 0 almost always; the history a run sends is cut to what its reservation counted.",
    }),
    knowledge: list(closed({ chunk: publicId('chunk'), document: publicId('document'), rank: integer() }), { description: 'What retrieval used: ids and ranks, never text.' }),
    created_at: timestamp(),
  },
  'Execution metadata of one run; never transcript content.',
);

export function logEntryObject(l: LogView): Static<typeof LogEntry> {
  return {
    id: l.public_id,
    run: l.run,
    agent: l.agent,
    status: l.status as RunStatus,
    latency_ms: l.latency_ms,
    model: l.model,
    usage: { input_tokens: l.input_tokens, output_tokens: l.output_tokens, total_tokens: l.total_tokens, cached_tokens: l.cached_tokens },
    tool_names: l.tool_names,
    error_code: l.error_code as ErrorCode | null,
    uncharged_credits: l.uncharged_credits,
    refused: l.refused,
    usage_estimated: l.usage_estimated,
    history_omitted: l.history_omitted,
    knowledge: l.knowledge,
    created_at: l.created_at.toISOString(),
  };
}
