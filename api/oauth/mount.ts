import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context } from 'koa';
import type { Provider } from 'oidc-provider';
import { OAUTH_PREFIX, oauthProvider } from './provider';

type Handler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;
const handlers = new WeakMap<Provider, Handler>();

/**
 * Lets the provider (a Koa application of its own, with its own cookie keys) answer the request at
 * `path` below /oauth. The provider derives its mount point, and so every URL it prints, from the
 * difference between req.originalUrl and req.url, as under Express's app.use(prefix, ...).
 */
export async function handOver(ctx: Context, path: string): Promise<void> {
  const provider = await oauthProvider();
  let handle = handlers.get(provider);
  if (!handle) handlers.set(provider, (handle = provider.callback() as unknown as Handler));
  const req = ctx.req as IncomingMessage & { originalUrl?: string };
  const url = req.url;
  req.originalUrl = OAUTH_PREFIX + path;
  req.url = path;
  // The provider writes the response; this application must not write it again.
  ctx.respond = false;
  try {
    await handle(req, ctx.res);
  } finally {
    req.url = url;
    delete req.originalUrl;
  }
}

/** Every path below /oauth that no route of this service took: /oauth/auth, /oauth/token, /oauth/reg, ... */
export async function mountProvider(ctx: Context): Promise<void> {
  await handOver(ctx, ctx.url.slice(OAUTH_PREFIX.length) || '/');
}
