import Koa from 'koa';
import Router from '@koa/router';
import { config } from '../infra/config';
import { setOutageMeter } from '../infra/dependencyOutages';
import { apiOutageMeter } from '../infra/metrics';
import { failFastWhenUnavailable } from '../infra/temporalClient';
import { dashboardRouter } from './dashboard/dashboard';
import { allowedMethods } from './middleware/allowedMethods';
import { oauthRouter } from './oauth/router';
import { mcpRouter } from './routes/mcp/mcp';
import { errorEnvelope } from './middleware/errorEnvelope';
import { jsonBody } from './middleware/jsonBody';
import type { Schemas } from '../contract/parse';
import { requestContext } from './middleware/requestContext';
import { agentsRoutes } from './routes/agents/agents';
import { codecRoutes } from './routes/codec/codec';
import { conversationsRoutes } from './routes/conversations/conversations';
import { documentsRoutes } from './routes/documents/documents';
import { documentTransfersRoutes } from './routes/documentTransfers/documentTransfers';
import { extractionsRoutes } from './routes/extractions/extractions';
import { jobsRoutes } from './routes/jobs/jobs';
import { schedulesRoutes } from './routes/schedules/schedules';
import { secretsRoutes } from './routes/secrets/secrets';
import { knowledgeRoutes } from './routes/knowledge/knowledge';
import { reportsRoutes } from './routes/reports/reports';
import { healthRoutes } from './routes/health/health';
import { logsRoutes } from './routes/logs/logs';
import { metricsRoutes } from './routes/metrics/metrics';
import { responsesRoutes } from './routes/responses/responses';
import { runsRoutes } from './routes/runs/runs';
import { partnerWebhooksRoutes } from './routes/partnerWebhooks/partnerWebhooks';
import { usageRoutes } from './routes/usage/usage';
import { webhooksRoutes } from './routes/webhooks/webhooks';
import { openapiRoutes } from './routes/openapi/openapi';
import { chatCompletionsRoutes } from './routes/v1/chatCompletions';
import { modelsRoutes } from './routes/v1/models';
import { responsesV1Routes } from './routes/v1/responses';
import type { AppState } from './middleware/state';

/** The API's routers: uploads stream their raw bytes to storage, so they are routed before the JSON body parser reads anything. */
function routers(): { rawBody: Router<AppState>; json: Router<AppState> } {
  const router = new Router<AppState>();
  healthRoutes(router);
  metricsRoutes(router);
  responsesRoutes(router);
  agentsRoutes(router);
  conversationsRoutes(router);
  runsRoutes(router);
  logsRoutes(router);
  usageRoutes(router);
  codecRoutes(router);
  documentsRoutes(router);
  knowledgeRoutes(router);
  reportsRoutes(router);
  extractionsRoutes(router);
  jobsRoutes(router);
  schedulesRoutes(router);
  secretsRoutes(router);
  webhooksRoutes(router);
  partnerWebhooksRoutes(router);
  openapiRoutes(router);
  // The OpenAI-compatible surface: the same pipeline, OpenAI's wire shapes (api/openai/).
  modelsRoutes(router);
  chatCompletionsRoutes(router);
  responsesV1Routes(router);
  const rawBodyRouter = new Router<AppState>();
  documentTransfersRoutes(rawBodyRouter);
  return { rawBody: rawBodyRouter, json: router };
}

/** Every route the API answers, as method and path template: test/openapi.test.ts holds the OpenAPI document to it. */
export function routeList(): { method: string; path: string; schemas?: Schemas }[] {
  const { rawBody, json } = routers();
  // The MCP router is listed too; its request handler is never asked for here.
  const mcp = mcpRouter(() => {
    throw new Error('not serving');
  });
  return [rawBody, json, mcp].flatMap((r) =>
    r.stack.flatMap((layer) => {
      // What the route's validate() step checks (api/middleware/validate.ts marks it).
      const schemas = layer.stack.map((m) => (m as { schemas?: Schemas }).schemas).find(Boolean);
      return layer.methods.map((method) => ({ method, path: String(layer.path), ...(schemas && { schemas }) }));
    }),
  );
}

/** The HTTP API: stateless, so any number of instances can serve behind a load balancer. */
export function createApp(): Koa<AppState> {
  const app = new Koa<AppState>();
  setOutageMeter(apiOutageMeter);
  failFastWhenUnavailable();
  let handler: ReturnType<Koa['callback']> | undefined;
  // X-Forwarded-For is read only behind proxies the operator names (TRUST_PROXY_HOPS), and then only
  // the entries they wrote: with none, a client could choose its own address per request and escape
  // every per-address limit (failed keys, grant tokens, passwords, OAuth registration).
  const hops = config().trustProxyHops;
  app.proxy = hops > 0;
  app.maxIpsCount = hops;
  const { rawBody, json } = routers();
  const dashboard = dashboardRouter();
  const oauth = oauthRouter();
  // MCP reads its own JSON-RPC body; its tools call this app's endpoints in process.
  const mcp = mcpRouter(() => (handler ??= app.callback()));
  app.use(requestContext);
  app.use(errorEnvelope);
  app.use(allowedMethods(() => [rawBody, dashboard, oauth, mcp, json]));
  app.use(rawBody.routes());
  // The dashboard's pages post forms, not JSON: routed before the JSON body parser too.
  app.use(dashboard.routes());
  app.use(oauth.routes());
  app.use(mcp.routes());
  app.use(jsonBody);
  app.use(json.routes());
  // Errors are answered in the envelope; Koa's own error printing would only duplicate them.
  app.silent = true;
  return app;
}
