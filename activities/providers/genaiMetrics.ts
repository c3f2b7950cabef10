import type { MetricHistogram, MetricTags } from '@temporalio/common';
import { Runtime } from '@temporalio/worker';
import { GENAI_METRICS } from '../../domain/genaiSpans';

/**
 * The GenAI conventions' client metrics, on the worker's own endpoint (WORKER_METRICS_PORT) beside its
 * others, where model calls are made: tokens by type, each call's duration and a stream's time to its
 * first chunk, labelled as the conventions label them (operation, provider, request and response
 * model, error type), in Prometheus's naming. The instruments are made once per process, on the
 * runtime's meter (an activity's own meter would add the activity's labels).
 */
interface Instruments {
  tokens: MetricHistogram;
  duration: MetricHistogram;
  firstChunk: MetricHistogram;
}

let instruments: Instruments | undefined;

function made(): Instruments {
  if (!instruments) {
    const meter = Runtime.instance().metricMeter;
    instruments = {
      tokens: meter.createHistogram(GENAI_METRICS.tokenUsage, 'int', '{token}', 'Tokens used by model calls, by token type (input, output).'),
      duration: meter.createHistogram(GENAI_METRICS.duration, 'float', 's', 'Seconds a model call took, from its request to its last byte.'),
      firstChunk: meter.createHistogram(GENAI_METRICS.timeToFirstChunk, 'float', 's', 'Seconds from a streamed model call\'s request to its first chunk.'),
    };
  }
  return instruments;
}

/** The conventions' advised buckets (workers/worker.ts gives them to the runtime's exporter). */
export const GENAI_BUCKETS: Record<string, number[]> = {
  [GENAI_METRICS.tokenUsage]: [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864],
  [GENAI_METRICS.duration]: [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92],
  [GENAI_METRICS.timeToFirstChunk]: [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92],
};

/** One model call's figures; tokens only when the provider reported them. */
export function recordChatMetrics(
  labels: { provider: string; requestModel: string; responseModel?: string; errorType?: string },
  figures: { seconds: number; firstChunkSeconds?: number; inputTokens?: number; outputTokens?: number },
): void {
  const m = made();
  const tags: MetricTags = {
    gen_ai_operation_name: 'chat',
    gen_ai_provider_name: labels.provider,
    gen_ai_request_model: labels.requestModel,
    ...(labels.responseModel && { gen_ai_response_model: labels.responseModel }),
    ...(labels.errorType && { error_type: labels.errorType }),
  };
  m.duration.record(figures.seconds, tags);
  if (figures.firstChunkSeconds !== undefined) m.firstChunk.record(figures.firstChunkSeconds, tags);
  if (figures.inputTokens !== undefined) m.tokens.record(figures.inputTokens, { ...tags, gen_ai_token_type: 'input' });
  if (figures.outputTokens !== undefined) m.tokens.record(figures.outputTokens, { ...tags, gen_ai_token_type: 'output' });
}
