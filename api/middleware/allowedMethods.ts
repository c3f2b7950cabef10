import type Router from '@koa/router';
import type { Middleware } from 'koa';
import { ServiceError } from '../../domain/errors';
import type { AppState } from './state';

/**
 * A method a known path does not take is 405 with the methods it does take in `Allow` (HTTP's answer,
 * as on /mcp); a path no route has stays 501 `not_implemented` (errorEnvelope). Runs around every
 * router, so it sees what they all left unanswered.
 */
export function allowedMethods(routers: () => Router<any>[]): Middleware<AppState> {
  return async (ctx, next) => {
    await next();
    if (ctx.status !== 404 || ctx.body !== undefined) return;
    const allowed = new Set(routers().flatMap((router) => router.match(ctx.path, ctx.method).path.flatMap((layer) => layer.methods)));
    if (allowed.size === 0) return;
    // HEAD comes with GET (Koa answers it); OPTIONS is not served.
    const allow = [...allowed].filter((m) => m !== 'HEAD').join(', ');
    throw new ServiceError('method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}; allowed: ${allow}.`, { Allow: allow });
  };
}
