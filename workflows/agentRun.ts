import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  type RetryPolicy,
} from '@temporalio/workflow';
import type * as activities from '../activities';
import { ERROR_TABLE, isErrorCode, type ErrorCode } from '../domain/errors';
import { addUsage, ZERO_USAGE, type OutputItem, type RunInput, type RunOutcome, type Usage } from '../domain/runs';

/** Model calls: a failed provider call is tried three times in all, then the run fails 502. */
export const MODEL_RETRY: RetryPolicy = {
  initialInterval: '500ms',
  backoffCoefficient: 2,
  maximumInterval: '5s',
  maximumAttempts: 3,
};

/** Bookkeeping in PostgreSQL: short, idempotent, so retried generously. */
const { beginRun, settleRun } = proxyLocalActivities<typeof activities>({
  startToCloseTimeout: '10s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '5s', maximumAttempts: 10 },
});

/** At most one repair after the first answer: the call count is known before the run. */
const REPAIR_ATTEMPTS = 1;

interface Failure {
  code: ErrorCode;
  message: string;
}

function failureOf(err: unknown, timeoutMs: number): Failure {
  if (isCancellation(err)) return { code: 'provider_unavailable', message: `The run did not finish within timeout_ms (${timeoutMs} ms).` };
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure && isErrorCode(cause.type)) return { code: cause.type, message: cause.message };
  return { code: 'internal_error', message: 'The run failed inside the service.' };
}

/**
 * One run of an agent: running → completed, or → failed / blocked with an error code from the
 * table, or → cancelled when asked to stop. Every path settles exactly once.
 */
export async function agentRun(input: RunInput): Promise<RunOutcome> {
  const { generate } = proxyActivities<typeof activities>({
    startToCloseTimeout: input.options.timeoutMs,
    // Short, so a cancelled run reaches the call quickly and a dead worker's call is retried soon.
    heartbeatTimeout: '2s',
    // Wait for the call to stop, so what it consumed is recorded before the run settles.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: MODEL_RETRY,
  });

  const begun = await beginRun(input);
  let usage: Usage = ZERO_USAGE;
  let model = input.agent.config.model ?? 'default';
  const format = input.options.responseFormat;

  async function respond(): Promise<OutputItem[] | Failure> {
    const base = {
      runId: input.runId,
      config: input.agent.config,
      input: input.input,
      attachments: input.attachments,
      historyFrom: input.kind !== 'response' && input.options.memoryPolicy === 'auto' ? { conversationId: begun.conversationId, beforeRunKey: begun.runKey } : undefined,
      format,
      stream: input.options.stream,
    };
    let reply = await generate({ ...base, call: 1 });
    usage = addUsage(usage, reply.usage);
    model = reply.model;
    for (let repair = 0; !reply.check.ok && repair < REPAIR_ATTEMPTS; repair++) {
      reply = await generate({ ...base, call: 2 + repair, repair: { previous: reply.text, problems: reply.check.problems } });
      usage = addUsage(usage, reply.usage);
    }
    if (!reply.check.ok) {
      return { code: 'structured_output_failed', message: `The reply did not match the schema at: ${reply.check.paths.join(', ')}` };
    }
    return format.type === 'text' ? [{ type: 'text', text: reply.text }] : [{ type: 'json', json: reply.check.value }];
  }

  const settle = (status: 'completed' | 'failed' | 'cancelled' | 'blocked', output: OutputItem[], error?: Failure) =>
    CancellationScope.nonCancellable(() => settleRun({ input, begun, status, output, usage, model, toolNames: [], error }));

  try {
    const result = await CancellationScope.withTimeout(input.options.timeoutMs, respond);
    if (CancellationScope.current().consideredCancelled) return await settle('cancelled', []);
    if (Array.isArray(result)) return await settle('completed', result);
    return await settle(ERROR_TABLE[result.code].runStatus, [], result);
  } catch (err) {
    if (isCancellation(err) && CancellationScope.current().consideredCancelled) return await settle('cancelled', []);
    const failure = failureOf(err, input.options.timeoutMs);
    return await settle(ERROR_TABLE[failure.code].runStatus, [], failure);
  }
}
