import Router from '@koa/router';
import type { Context } from 'koa';
import type { RequestListener } from 'node:http';
import { ServiceError } from '../../../domain/errors';
import { insufficientScope } from '../../mcp/challenge';
import { config } from '../../../infra/config';
import { bearerPrincipal } from '../../middleware/auth';
import { workspaceOf } from '../../../callers/principal';
import { enforceRateLimit } from '../../middleware/rateLimit';
import { readJsonRpc } from '../../mcp/body';
import { answer } from '../../mcp/dispatch';
import { errorReply, TransportError } from '../../mcp/protocol';
import type { AppState } from '../../middleware/state';
import { PostMcp } from './schema';

const MCP_PATH = '/mcp';

/** Browsers send Origin; a page of another site must not drive a user's MCP client credentials. */
function refuseForeignOrigin(ctx: Context): void {
  const origin = ctx.get('Origin');
  if (origin !== '' && !config().mcpAllowedOrigins.includes(origin)) {
    throw new ServiceError('permission_denied', `Requests from the origin ${origin} are refused; MCP_ALLOWED_ORIGINS lists the origins allowed.`);
  }
}

/**
 * POST /mcp: one JSON-RPC message per POST, one JSON reply, no sessions, tools only. Routed before
 * the API's JSON body parser: a malformed body is a JSON-RPC parse error, not the API's envelope.
 * `api` is this app's own request handler, through which tool calls reach the HTTP endpoints.
 */
export function mcpRouter(api: () => RequestListener): Router<AppState> {
  const router = new Router<AppState>();
  const notAllowed = (ctx: Context) => {
    ctx.set('Allow', 'POST');
    throw new ServiceError('method_not_allowed', 'The MCP transport takes one JSON-RPC message per POST; there is no event stream and no session to end.');
  };
  router.get(MCP_PATH, (ctx) => notAllowed(ctx));
  router.delete(MCP_PATH, (ctx) => notAllowed(ctx));

  // The body is read by the transport itself (a refusal is JSON-RPC's), with the schema it declares.
  const declared = Object.assign(async (_ctx: Context, next: () => Promise<unknown>) => next(), { schemas: PostMcp });
  router.post(MCP_PATH, declared, async (ctx) => {
    refuseForeignOrigin(ctx);
    const principal = await bearerPrincipal(ctx, 'mcp');
    if (!principal.scopes.has('mcp:connect')) throw insufficientScope(['mcp:connect'], 'This credential lacks the scope "mcp:connect", which the MCP transport needs.');
    ctx.state.principal = principal;
    const workspace = workspaceOf(principal);
    let message;
    try {
      message = await readJsonRpc(ctx);
    } catch (err) {
      if (!(err instanceof TransportError)) throw err;
      ctx.status = err.status;
      ctx.body = errorReply(null, err);
      return;
    }
    // Notifications and responses need no answer.
    if (message === undefined) {
      ctx.status = 202;
      // Empty, not Koa's default status text, and no content to type.
      ctx.body = '';
      ctx.remove('Content-Type');
      return;
    }
    const counted = (endpoint: string) => enforceRateLimit({ credential: principal.keyId, tenant: workspace.publicId, endpoint }, ctx.state.requestId, { failOpen: true });
    const { status, headers, body } = await answer(message, { principal, headers: (name) => ctx.get(name), count: counted, api: api(), clientAddress: ctx.ip });
    ctx.status = status;
    ctx.set(headers);
    ctx.body = body;
  });
  return router;
}
