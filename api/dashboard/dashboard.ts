import { readFileSync } from 'node:fs';
import path from 'node:path';
import Router from '@koa/router';
import { PROJECT_ROOT } from '../../infra/projectRoot';
import { htmlErrors, type PageState } from './page';
import { activityPages } from './pages/activity';
import { agentPages } from './pages/agents';
import { keyPages } from './pages/keys';
import { runPages } from './pages/run';
import { secretPages } from './pages/secrets';
import { signInPages } from './pages/signIn';
import { usagePages } from './pages/usage';

const STYLESHEET = readFileSync(path.join(PROJECT_ROOT, 'api/dashboard/static/dashboard.css'));

/**
 * The dashboard: server-rendered pages for workspace members, on the API's own port. Forms post
 * url-encoded bodies, so these routes come before the API's JSON body parser.
 */
export function dashboardRouter(): Router<PageState> {
  const router = new Router<PageState>();
  router.use('/dashboard', htmlErrors);
  router.get('/dashboard/static/dashboard.css', (ctx) => {
    ctx.type = 'text/css; charset=utf-8';
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.body = STYLESHEET;
  });
  signInPages(router);
  usagePages(router);
  keyPages(router);
  secretPages(router);
  agentPages(router);
  activityPages(router);
  runPages(router);
  return router;
}
