import { validate } from '@readme/openapi-parser';
import { routeList } from '../api/app';
import { openApiDocument } from '../api/openapi/document';
import { documentedRequests } from '../api/openapi/operation';
import { ERROR_TABLE } from '../domain/errors';
import { EVENT_TYPES } from '../domain/events';
import { STREAM_EVENT_TYPES } from '../domain/streamEvents';
import { useApi } from './support/stack';

const api = useApi();

type Operation = { 'x-required-scopes': string[]; security: Record<string, string[]>[] };
const paths = openApiDocument.paths as Record<string, Record<string, Operation>>;

/** `/api/v2/runs/:run_id` → `/api/v2/runs/{run_id}`. */
const template = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

describe('the OpenAPI document', () => {
  it('has every route the router has, and nothing else', () => {
    const routes = routeList()
      .filter((r) => r.method !== 'HEAD' && r.method !== 'OPTIONS')
      .map((r) => `${r.method} ${template(r.path)}`);
    const documented = Object.entries(paths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`));
    expect(routes.length).toBeGreaterThan(40);
    expect([...new Set(documented)].sort()).toEqual([...new Set(routes)].sort());
  });

  it('documents each route\'s request with the very schemas the route validates it with', () => {
    const routes = routeList().filter((r) => r.method !== 'HEAD' && r.method !== 'OPTIONS');
    const drift = routes
      .filter((r) => documentedRequests.get(paths[template(r.path)][r.method.toLowerCase()]) !== r.schemas)
      .map((r) => `${r.method} ${r.path}`);
    expect(drift).toEqual([]);
    expect(routes.filter((r) => r.schemas).length).toBeGreaterThan(40);
  });

  it('passes the OpenAPI 3.1 validator', async () => {
    const result = await validate(structuredClone(openApiDocument) as Parameters<typeof validate>[0]);
    expect(result).toMatchObject({ valid: true, specification: 'OpenAPI' });
    expect(openApiDocument.openapi).toBe('3.1.0');
  });

  it('enumerates the error table, the stream events and the webhook events of the domain', () => {
    const schemas = (openApiDocument.components as { schemas: Record<string, { enum?: string[]; oneOf?: unknown[] }> }).schemas;
    expect(schemas.ErrorCode.enum).toEqual(Object.keys(ERROR_TABLE));
    expect(schemas.ResponseStream.oneOf).toHaveLength(STREAM_EVENT_TYPES.length);
    expect(Object.keys(openApiDocument.webhooks as object).sort()).toEqual([...EVENT_TYPES].sort());
  });

  it('declares the scopes of each authenticated operation as its route does', () => {
    const op = (method: string, path: string) => paths[path][method];
    expect(op('post', '/api/v2/agents/{agent_id}/runs')['x-required-scopes']).toEqual(['agents:run']);
    expect(op('post', '/api/v2/agents/{agent_id}/runs').security).toEqual(
      expect.arrayContaining([{ companyApiKey: ['agents:run'] }, { applicationCredential: ['agents:run'] }, { dashboardSession: ['agents:run'], csrfToken: [] }]),
    );
    expect(op('get', '/api/v2/logs').security).toContainEqual({ dashboardSession: ['logs:read'] });
    expect(op('get', '/api/v1/partner/webhooks/deliveries').security).toEqual([{ companyApiKey: ['webhooks:read'] }]);
    expect(op('put', '/api/v2/documents/uploads/{token}').security).toEqual([]);
    const schemes = (openApiDocument.components as { securitySchemes: Record<string, Record<string, unknown>> }).securitySchemes;
    expect(schemes.companyApiKey).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(schemes.dashboardSession).toMatchObject({ type: 'apiKey', in: 'cookie', name: 'aes_session' });
    expect(schemes.applicationCredential).toMatchObject({ type: 'oauth2', flows: { authorizationCode: { authorizationUrl: '/oauth/auth', tokenUrl: '/oauth/token' } } });
  });
});

describe('serving it', () => {
  it('answers GET /api/v2/openapi.json without a credential', async () => {
    const res = await fetch(`${api.url}/api/v2/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual(JSON.parse(JSON.stringify(openApiDocument)));
  });

  it('renders the reference at /docs from a bundle the API serves itself', async () => {
    const page = await fetch(`${api.url}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await page.text();
    expect(html).toContain('spec-url="/api/v2/openapi.json"');
    const scripts = [...html.matchAll(/<script[^>]*src="([^"]+)"/g)].map((m) => m[1]);
    expect(scripts).toEqual(['/docs/redoc.standalone.js']);
    // Nothing from another origin: no CDN, no web fonts.
    expect(html).not.toMatch(/https?:\/\//);

    const bundle = await fetch(`${api.url}${scripts[0]}`);
    expect(bundle.status).toBe(200);
    expect(bundle.headers.get('content-type')).toMatch(/^application\/javascript/);
    const code = await bundle.text();
    expect(code.length).toBeGreaterThan(500_000);
    expect(code).toContain('Redoc');
  });
});
