import Koa from 'koa';
import Router from '@koa/router';
import { dashboardRouter } from './dashboard/dashboard';
import { errorEnvelope } from './middleware/errorEnvelope';
import { jsonBody } from './middleware/jsonBody';
import { requestContext } from './middleware/requestContext';
import { agentsRoutes } from './routes/agents/agents';
import { codecRoutes } from './routes/codec/codec';
import { conversationsRoutes } from './routes/conversations/conversations';
import { documentsRoutes } from './routes/documents/documents';
import { documentTransfersRoutes } from './routes/documentTransfers/documentTransfers';
import { extractionsRoutes } from './routes/extractions/extractions';
import { jobsRoutes } from './routes/jobs/jobs';
import { knowledgeRoutes } from './routes/knowledge/knowledge';
import { reportsRoutes } from './routes/reports/reports';
import { healthRoutes } from './routes/health/health';
import { logsRoutes } from './routes/logs/logs';
import { metricsRoutes } from './routes/metrics/metrics';
import { responsesRoutes } from './routes/responses/responses';
import { runsRoutes } from './routes/runs/runs';
import { partnerWebhooksRoutes } from './routes/partnerWebhooks/partnerWebhooks';
import { webhooksRoutes } from './routes/webhooks/webhooks';
import type { AppState } from './state';

/** The HTTP API: stateless, so any number of instances can serve behind a load balancer. */
export function createApp(): Koa<AppState> {
  const app = new Koa<AppState>();
  // Behind one load balancer: the client address is the last X-Forwarded-For entry, the one the
  // balancer wrote, so a client cannot choose its own address (failed-authentication limits key on it).
  app.proxy = true;
  app.maxIpsCount = 1;
  const router = new Router<AppState>();
  healthRoutes(router);
  metricsRoutes(router);
  responsesRoutes(router);
  agentsRoutes(router);
  conversationsRoutes(router);
  runsRoutes(router);
  logsRoutes(router);
  codecRoutes(router);
  documentsRoutes(router);
  knowledgeRoutes(router);
  reportsRoutes(router);
  extractionsRoutes(router);
  jobsRoutes(router);
  webhooksRoutes(router);
  partnerWebhooksRoutes(router);
  // Uploads stream their raw bytes to storage: they are routed before the JSON body parser reads anything.
  const rawBodyRouter = new Router<AppState>();
  documentTransfersRoutes(rawBodyRouter);
  app.use(requestContext);
  app.use(errorEnvelope);
  app.use(rawBodyRouter.routes());
  // The dashboard's pages post forms, not JSON: routed before the JSON body parser too.
  app.use(dashboardRouter().routes());
  app.use(jsonBody);
  app.use(router.routes());
  // Errors are answered in the envelope; Koa's own error printing would only duplicate them.
  app.silent = true;
  return app;
}
