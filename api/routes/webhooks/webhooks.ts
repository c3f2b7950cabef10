import Router from '@koa/router';
import { WEBHOOK_CATALOGUE } from '../../../domain/webhookCatalogue';
import { authorize } from '../../middleware/auth';
import type { AppState } from '../../middleware/state';

/** GET /api/v2/webhooks/catalogue/: every event type, the resource it carries, the scope it needs, whether it is in preview. Any credential. */
export function webhooksRoutes(router: Router<AppState>): void {
  router.get('/api/v2/webhooks/catalogue', authorize({ scopes: 'any', credential: 'either', endpoint: 'webhooks_catalogue' }), (ctx) => {
    ctx.body = WEBHOOK_CATALOGUE;
  });
}
