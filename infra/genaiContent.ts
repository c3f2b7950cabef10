import { context, createContextKey } from '@opentelemetry/api';
import { defaultPayloadConverter } from '@temporalio/common';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';
import { CONTENT_HEADER } from '../domain/genaiSpans';

/**
 * Whether a span may hold a run's content (prompts, answers, system instructions, tool arguments and
 * results): never by default; with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true (the
 * variable OTel's GenAI instrumentations read), only in an activity of a run whose exchange the
 * service keeps, as its CONTENT_HEADER says (workflows/genaiInterceptors.ts). A stateless
 * /api/v2/responses (or /v1) run's header is never set: what the service keeps nowhere in plaintext
 * it sends to no collector either.
 */
export function contentCaptured(): boolean {
  return captureAsked() && context.active().getValue(OPEN) === true;
}

function captureAsked(): boolean {
  return (process.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT ?? '').trim().toLowerCase() === 'true';
}

const OPEN = createContextKey('aes.genai.content_open');

/** The worker's activity interceptor (after Temporal's, inside the activity's span): the header's word, in the activity's context. */
export class ContentHeaderInterceptor implements ActivityInboundCallsInterceptor {
  execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const header = input.headers[CONTENT_HEADER];
    if (!header || defaultPayloadConverter.fromPayload(header) !== true) return next(input);
    return context.with(context.active().setValue(OPEN, true), () => next(input));
  }
}
