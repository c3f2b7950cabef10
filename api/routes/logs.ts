import Router from '@koa/router';
import type { AppState } from '../state';

/** GET /api/v2/logs: execution metadata of runs, never transcript content. */
export function logsRoutes(_router: Router<AppState>): void {}
