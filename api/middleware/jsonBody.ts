import type { Middleware } from 'koa';
import { invalidRequest } from '../../domain/errors';
import { readBody } from './readBody';
import type { AppState } from './state';

/** Largest JSON body accepted; structured inputs and schemas fit comfortably. */
export const MAX_BODY_BYTES = 1024 * 1024;

async function readRaw(ctx: Parameters<Middleware<AppState>>[0]): Promise<Buffer> {
  const raw = await readBody(ctx.req, MAX_BODY_BYTES);
  if (raw === 'tooLarge') throw invalidRequest(`Request body exceeds ${MAX_BODY_BYTES} bytes.`);
  return raw;
}

/**
 * Reads POST/PUT/PATCH bodies as JSON, keeping the raw bytes (idempotency fingerprints hash them).
 * Malformed JSON is a 400 in the envelope like any other bad input.
 */
export const jsonBody: Middleware<AppState> = async (ctx, next) => {
  if (ctx.method === 'POST' || ctx.method === 'PUT' || ctx.method === 'PATCH') {
    const raw = await readRaw(ctx);
    ctx.state.rawBody = raw;
    if (raw.length > 0) {
      if (!ctx.is('application/json', 'application/*+json') && ctx.request.type !== '') {
        throw invalidRequest('Request body must be JSON (Content-Type: application/json).');
      }
      try {
        ctx.request.body = JSON.parse(raw.toString('utf8'));
      } catch {
        throw invalidRequest('Request body is not valid JSON.');
      }
    } else {
      ctx.request.body = undefined;
    }
  }
  await next();
};
