import type { Context, Middleware } from 'koa';
import * as yup from 'yup';
import { about } from '../../contract/about';
import { ServiceError } from '../../domain/errors';
import { logger } from '../../infra/logger';
import { claim, fingerprintOf, type StoredResponse } from './idempotency';
import type { AppState } from './state';
import { renderFailure } from './errorEnvelope';
import { idempotentReplays } from '../../infra/metrics';

/** Spec: an Idempotency-Key is at most 255 characters. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/** The header an idempotent endpoint validates with the rest of its request (before authentication). */
export const IDEMPOTENCY_HEADERS = yup.object({
  'idempotency-key': yup
    .string()
    .max(MAX_IDEMPOTENCY_KEY_LENGTH, `Idempotency-Key must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters.`)
    .meta(about('Same key and body: the stored answer replays byte for byte for 24 hours. Same key, different body: 409 `idempotency_conflict`.')),
});

/** The replay marker header; its spelling differs per endpoint in the spec. */
export type ReplayMarker = 'Idempotency-Replayed' | 'Idempotent-Replay';

type Ctx = Context & { state: AppState };

// Per request, not part of the answer: a replay carries its own request id.
const UNSTORED_HEADERS = new Set(['x-request-id', 'content-length']);

/**
 * An internal failure or an unavailable dependency releases the key so a retry can run (unless the
 * request had begun its work: then the retry resumes it); every other answer, failures included, is
 * the request's outcome and replays.
 */
const releases = (status: number) => status === 500 || status === 503;

function bodyBytes(body: unknown): Buffer {
  if (body === undefined || body === null) return Buffer.alloc(0);
  if (Buffer.isBuffer(body)) return body;
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (typeof (body as { pipe?: unknown }).pipe === 'function' || body instanceof ReadableStream || body instanceof Blob) {
    throw new Error('an idempotent endpoint answered with a body that cannot be stored for replay');
  }
  return Buffer.from(JSON.stringify(body), 'utf8');
}

function captured(ctx: Ctx): StoredResponse {
  const body = bodyBytes(ctx.body);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(ctx.response.headers)) {
    if (!UNSTORED_HEADERS.has(name) && value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return { kind: 'body', status: ctx.status, headers, body, runId: ctx.state.runId ?? null };
}

function streamed(ctx: Ctx): StoredResponse {
  return { kind: 'stream', status: ctx.res.statusCode, headers: { 'content-type': String(ctx.res.getHeader('content-type') ?? '') }, body: Buffer.alloc(0), runId: ctx.state.runId ?? null };
}

/** Answers exactly what was stored; the original answer is sent through here too, so both are the same bytes. */
function send(ctx: Ctx, response: StoredResponse): void {
  ctx.status = response.status;
  for (const [name, value] of Object.entries(response.headers)) ctx.set(name, value);
  ctx.body = response.body.length > 0 ? response.body : null;
}

function replay(ctx: Ctx, response: StoredResponse, marker: string): void {
  if (response.runId) ctx.state.runId = response.runId;
  idempotentReplays.inc({ endpoint: ctx.state.endpoint ?? 'unknown' });
  send(ctx, response);
  ctx.set(marker, 'true');
}

/**
 * Declares an endpoint idempotent under the Idempotency-Key header, answering replays with `marker`.
 * Placed after authorize() (the key is scoped by its endpoint name and credential) and before
 * anything is resolved, spent or started (DESIGN.md §4); the endpoint validates IDEMPOTENCY_HEADERS.
 */
export function idempotent(marker: ReplayMarker): Middleware<AppState> {
  return async (ctx, next) => {
    const key = ctx.get('Idempotency-Key');
    if (key === '') return next();
    const { principal, endpoint } = ctx.state;
    if (!principal || !endpoint) throw new Error('idempotent() is declared before authorize()');

    const decision = await claim(
      { endpoint, environment: principal.environment, apiKeyKey: principal.keyKey, memberKey: principal.memberKey, apiKeyId: principal.keyId, key },
      fingerprintOf(ctx.method, ctx.originalUrl, ctx.state.rawBody ?? Buffer.alloc(0)),
    );
    if (decision.outcome === 'conflict') {
      throw new ServiceError(
        'idempotency_conflict',
        decision.reason === 'in_flight'
          ? 'A request with this Idempotency-Key is still in progress; retry once it has finished.'
          : 'This Idempotency-Key was already used with a different request; use a new key for a new request.',
      );
    }
    if (decision.outcome === 'replay') {
      if (decision.response.kind === 'body') return replay(ctx, decision.response, marker);
      // A streamed answer was not stored: it is replayed by following what it began (the run's events) again.
      idempotentReplays.inc({ endpoint: ctx.state.endpoint ?? 'unknown' });
      ctx.set(marker, 'true');
      ctx.state.recovery = { resumed: decision.response.runId ?? undefined, begin: () => Promise.reject(new Error('a replayed request begins nothing')) };
      return next();
    }

    ctx.state.recovery = { resumed: decision.resumed, begin: (id) => decision.begin(id) };
    // Resuming is answering the same request again: marked like a replay.
    if (decision.resumed) ctx.set(marker, 'true');
    try {
      await next();
    } catch (err) {
      if (!(err instanceof ServiceError) || releases(err.httpStatus)) {
        await decision.release().catch((e) => logger.error({ err: String(e), request_id: ctx.state.requestId }, 'idempotency release failed'));
        throw err;
      }
      renderFailure(ctx, err);
    }
    if (ctx.respond !== false && releases(ctx.status)) {
      await decision.release();
      return;
    }
    // An answer that is not the request's outcome yet (the work goes on) is not stored: a retry resumes.
    if (ctx.state.provisional) return;
    const response = ctx.respond === false ? streamed(ctx) : captured(ctx);
    if (ctx.respond !== false) send(ctx, response);
    // The answer stands even if it cannot be stored; a retry then resumes what the request began.
    await decision.complete(response).catch((e) => logger.error({ err: String(e), request_id: ctx.state.requestId }, 'idempotency record not stored'));
  };
}
