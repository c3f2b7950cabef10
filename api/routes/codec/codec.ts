import Router from '@koa/router';
import type { Middleware } from 'koa';
import { timingSafeEqual } from 'node:crypto';
import type { Payload } from '@temporalio/common';
import { ServiceError } from '../../../domain/errors';
import { addressRefusedFor, recordAuthFailure } from '../../../callers/authFailures';
import { config } from '../../../infra/config';
import { payloadCodec } from '../../../infra/payloadCodec';
import { validate } from '../../middleware/validate';
import { type Input } from '../../../contract/parse';
import type { AppState } from '../../middleware/state';
import { CodecRequest } from './schema';

type WirePayload = { metadata?: Record<string, string>; data?: string };

const toPayload = (p: WirePayload): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data ?? '', 'base64'),
});
const toWire = (p: Payload): WirePayload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? []).toString('base64')])),
  data: Buffer.from(p.data ?? []).toString('base64'),
});

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

/**
 * The operator credential: CODEC_OPERATOR_TOKEN as a bearer token (constant-time compare). Without
 * it the endpoint is off, except in development mode for callers on this machine (the socket's own
 * address, never a forwarded one): there the dev stack's Temporal UI, which sends no credential of
 * its own, decodes runs out of the box.
 */
const operator: Middleware<AppState> = async (ctx, next) => {
  const token = config().codecOperatorToken;
  if (!token && config().developmentMode && LOOPBACK.has(ctx.req.socket.remoteAddress ?? '')) return next();
  if (!token) throw new ServiceError('not_implemented', 'The codec endpoint is off: set CODEC_OPERATOR_TOKEN to serve it.');
  const wait = addressRefusedFor(ctx.ip);
  if (wait !== undefined) throw new ServiceError('rate_limited', 'Too many failed authentications from this address; retry after the window ends.', { 'Retry-After': String(wait) });
  const sent = Buffer.from(/^Bearer\s+(\S+)$/i.exec(ctx.get('Authorization'))?.[1] ?? '');
  const expected = Buffer.from(token);
  if (sent.length !== expected.length || !timingSafeEqual(sent, expected)) {
    // Guesses at the operator token count like guesses at API keys.
    if (sent.length > 0) await recordAuthFailure(ctx.ip);
    throw new ServiceError('authentication_error', 'The codec endpoint needs the operator token: Authorization: Bearer <CODEC_OPERATOR_TOKEN>.');
  }
  await next();
};

/**
 * POST /codec/decode and /codec/encode: Temporal's remote codec protocol, so an operator's Temporal UI
 * or CLI (`--codec-endpoint …/codec --codec-auth "Bearer …"`) shows the plaintext of runs' payloads,
 * which Temporal itself stores sealed. Browsers (the UI) are let in from CODEC_ALLOWED_ORIGINS.
 */
export function codecRoutes(router: Router<AppState>): void {
  const allowed = () => config().codecAllowedOrigins;
  const cors: Middleware<AppState> = async (ctx, next) => {
    const origin = ctx.get('Origin');
    if (origin && allowed().includes(origin)) {
      ctx.set('Access-Control-Allow-Origin', origin);
      ctx.set('Access-Control-Allow-Credentials', 'true');
      ctx.set('Vary', 'Origin');
    }
    await next();
  };
  for (const direction of ['decode', 'encode'] as const) {
    router.options(`/codec/${direction}`, cors, (ctx) => {
      ctx.set('Access-Control-Allow-Methods', 'POST');
      ctx.set('Access-Control-Allow-Headers', 'Authorization, Content-Type, X-Namespace');
      ctx.status = 204;
    });
    router.post<{ input: Input<typeof CodecRequest> }>(`/codec/${direction}`, cors, validate(CodecRequest), operator, async (ctx) => {
      const payloads = ctx.state.input.body.payloads.map(toPayload);
      const out = direction === 'decode' ? await payloadCodec.decode(payloads) : await payloadCodec.encode(payloads);
      ctx.body = { payloads: out.map(toWire) };
    });
  }
}
