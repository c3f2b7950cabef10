import Router from '@koa/router';
import { htmlErrors, type PageState } from '../dashboard/page';
import { interactionRoutes } from './interactions';
import { metadataRoutes } from './metadata';
import { mountProvider } from './mount';
import { OAUTH_PREFIX } from './provider';
import { throttleByAddress } from './throttle';

/**
 * OAuth 2.1: discovery metadata, the consent pages, and the authorization server mounted at /oauth.
 * Routed before the JSON body parser: the provider reads its own form bodies, the consent page too.
 */
export function oauthRouter(): Router<PageState> {
  const router = new Router<PageState>();
  router.use(`${OAUTH_PREFIX}/interaction`, htmlErrors);
  interactionRoutes(router);
  metadataRoutes(router);
  router.post(`${OAUTH_PREFIX}/reg`, throttleByAddress('oauth_registration'), mountProvider);
  router.get(`${OAUTH_PREFIX}/auth`, throttleByAddress('oauth_authorization'), mountProvider);
  router.all(`${OAUTH_PREFIX}/{*rest}`, mountProvider);
  return router;
}
