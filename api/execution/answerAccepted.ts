import type { Context } from 'koa';

/** 202 for queued work: the resource as it stands, and where the caller polls it. */
export function answerAccepted(ctx: Context, location: string, body: unknown): void {
  ctx.status = 202;
  ctx.set('Location', location);
  ctx.body = body;
}
