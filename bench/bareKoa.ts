import Koa from 'koa';
import Router from '@koa/router';

/**
 * `PORT=… node dist/bench/bareKoa.js`: the ceiling for auth_get. Koa and @koa/router as the API
 * uses them, one route, no middleware, a small JSON body like a one-item list.
 */
const app = new Koa();
const router = new Router();
router.get('/ping', (ctx) => {
  ctx.body = { object: 'list', data: [{ id: 'log_bench', status: 'completed' }], next: null };
});
app.use(router.routes());
app.listen(Number(process.env.PORT));
