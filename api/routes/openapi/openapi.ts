import { createReadStream } from 'node:fs';
import Router from '@koa/router';
import { openApiDocument } from '../../openapi/document';
import type { AppState } from '../../middleware/state';

/** Served from the API's own node_modules: the reference page loads nothing from elsewhere. */
const RENDERER = require.resolve('redoc/bundles/redoc.standalone.js');
const RENDERER_PATH = '/docs/redoc.standalone.js';

// The document never changes while the process runs: serialised once.
const DOCUMENT = JSON.stringify(openApiDocument);

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Agent Execution Service API reference</title>
</head>
<body>
<redoc spec-url="/api/v2/openapi.json"></redoc>
<script src="${RENDERER_PATH}"></script>
</body>
</html>
`;

/**
 * Only the API's own origin, and no inline script. Redoc injects its styles at run time (inline
 * styles) and runs its search index in a worker it builds from a blob.
 */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** GET /api/v2/openapi.json (the OpenAPI 3.1 document) and GET /docs (Redoc rendering it); no credential. */
export function openapiRoutes(router: Router<AppState>): void {
  router.get('/api/v2/openapi.json', (ctx) => {
    ctx.type = 'application/json';
    ctx.body = DOCUMENT;
  });

  router.get('/docs', (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Content-Security-Policy', CSP);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.body = PAGE;
  });

  router.get(RENDERER_PATH, (ctx) => {
    ctx.type = 'application/javascript; charset=utf-8';
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.body = createReadStream(RENDERER);
  });
}
