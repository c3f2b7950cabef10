import * as oauth from 'oauth4webapi';
import * as admin from '../admin/commands';
import { forgetCredentials } from '../api/middleware/credentials';
import { principalFromAccessToken } from '../api/oauth/accessTokens';
import { resetOAuthProvider } from '../api/oauth/provider';
import { wwwAuthenticate } from '../api/oauth/resources';
import { resetConfig } from '../infra/config';
import { QueryTypes } from 'sequelize';
import { fireSchedule } from '../activities/schedules';
import { revokeGrant } from '../db/oauthModels';
import { PostgresAdapter } from '../api/oauth/adapter';
import { db } from '../db/sequelize';
import { call, inOneRateWindow, tenant, useApi, type Tenant } from './support/stack';
import { REDIRECT_URI, insecure, Browser, fieldValue, offeredScopes, member, discover, register, authorizationUrl, consentPage, decide, connect, useOAuthFlow } from './support/oauthFlow';

const api = useApi();
useOAuthFlow(api);

// The issuer and both resources are named after PUBLIC_BASE_URL: here, the API under test.
beforeAll(() => {
  process.env.PUBLIC_BASE_URL = api.url;
  resetConfig();
  resetOAuthProvider();
});

const API = () => `${api.url}/api/v2`;
const MCP = () => `${api.url}/mcp`;
const respond = (token: string, t: Tenant) => call(api.url, 'POST', '/api/v2/responses', { key: token, body: { agent: t.agent, input: 'hello' } });

describe('OAuth 2.1 authorization server', () => {
  it('a client discovers, registers, is authorized by a member, and calls v2 with only the scopes granted; refresh tokens rotate', async () => {
    const t = await tenant();
    const m = await member(t, 'owner');

    // A 401 on v2 names where to start.
    const bare = await call(api.url, 'GET', '/api/v2/logs');
    expect(bare.status).toBe(401);
    expect(bare.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${api.url}/.well-known/oauth-protected-resource/api/v2"`);

    const { as, client, tokens } = await connect(m, { resource: API(), scopes: ['responses:create', 'logs:read', 'jobs:read'], grant: ['responses:create', 'logs:read'] });
    expect(as.code_challenge_methods_supported).toEqual(['S256']);
    expect(as.authorization_response_iss_parameter_supported).toBe(true);
    expect(tokens.token_type).toBe('bearer');
    expect(tokens.expires_in).toBe(600);
    expect(tokens.scope?.split(' ').sort()).toEqual(['logs:read', 'responses:create']);

    // The token is an application credential on v2: granted scopes work, the one left unticked does not.
    expect((await respond(tokens.access_token, t)).status).toBe(200);
    expect((await call(api.url, 'GET', '/api/v2/logs', { key: tokens.access_token })).status).toBe(200);
    const denied = await call(api.url, 'GET', '/api/v2/jobs', { key: tokens.access_token });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('permission_denied');
    // It acts as the member, in the member's workspace.
    const principal = await principalFromAccessToken(tokens.access_token, 'api');
    expect(principal).toMatchObject({ keyKey: null, keyId: m.id, kind: 'workspace', workspace: { publicId: t.workspace } });

    // Refresh: a new pair; the old refresh token is spent.
    const refreshed = await oauth.processRefreshTokenResponse(as, client, await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure));
    expect(refreshed.refresh_token).toBeDefined();
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    expect((await call(api.url, 'GET', '/api/v2/logs', { key: refreshed.access_token })).status).toBe(200);
    const replay = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure);
    expect(replay.status).toBe(400);
    expect(((await replay.json()) as { error: string }).error).toBe('invalid_grant');
  });

  it('binds a token to one resource: an /mcp token is refused on v2, and an unknown resource or none at all is refused', async () => {
    const t = await tenant();
    const m = await member(t, 'owner');
    const { tokens } = await connect(m, { resource: MCP(), scopes: ['mcp:connect', 'logs:read'], grant: ['mcp:connect', 'logs:read'] });
    const refused = await call(api.url, 'GET', '/api/v2/logs', { key: tokens.access_token });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toContain('error="invalid_token"');
    expect(await principalFromAccessToken(tokens.access_token, 'mcp')).toMatchObject({ keyId: m.id, scopes: new Set(['mcp:connect', 'logs:read']) });
    expect(await principalFromAccessToken(tokens.access_token, 'api')).toBeUndefined();

    const as = await discover(API());
    const client = await register(as);
    for (const resource of [`${api.url}/api/v1`, 'https://elsewhere.example/mcp', undefined]) {
      const request = await authorizationUrl(as, client, { resource, scopes: ['logs:read'] });
      const answer = await m.browser.go(request.url);
      expect(answer.location).toMatch(new RegExp(`^${REDIRECT_URI}\\?`));
      const error = new URL(answer.location!).searchParams;
      expect([resource, error.get('error')]).toEqual([resource, 'invalid_target']);
      expect(error.get('iss')).toBe(api.url);
    }
  });

  it('requires PKCE with S256: plain and a missing challenge are refused', async () => {
    const as = await discover(API());
    const client = await register(as);
    const plain = await authorizationUrl(as, client, { resource: API(), scopes: ['logs:read'], method: 'plain' });
    const plainAnswer = new URL((await new Browser().go(plain.url)).location!);
    expect(plainAnswer.searchParams.get('error')).toBe('invalid_request');
    expect(plainAnswer.searchParams.get('error_description')).toMatch(/code_challenge_method/);

    const none = new URL(plain.url);
    none.searchParams.delete('code_challenge');
    none.searchParams.delete('code_challenge_method');
    const noneAnswer = new URL((await new Browser().go(none.href)).location!);
    expect(noneAnswer.searchParams.get('error')).toBe('invalid_request');
    expect(noneAnswer.searchParams.get('error_description')).toMatch(/PKCE/);
  });

  it('consent grants no scope beyond the member role, and deny answers access_denied', async () => {
    const t = await tenant();
    const viewer = await member(t, 'viewer');
    const as = await discover(API());
    const client = await register(as);

    const request = await authorizationUrl(as, client, { resource: API(), scopes: ['responses:create', 'logs:read'] });
    const consent = await consentPage(viewer, request.url);
    expect(offeredScopes(consent.html)).toEqual(['logs:read']);
    expect(consent.html).toContain('Test MCP client');
    expect(consent.html).toContain(API());
    // A form tampered to grant what the role does not hold is refused.
    const action = /action="(\/oauth\/interaction\/[\w-]+\/confirm)"/.exec(consent.html)![1];
    const tampered = await viewer.browser.go(action, { form: { _csrf: fieldValue(consent.html, '_csrf')!, scope: ['logs:read', 'responses:create'] } });
    expect(tampered.status).toBe(403);
    // Without the session's CSRF token, nothing is granted either.
    expect((await viewer.browser.go(action, { form: { _csrf: 'forged', scope: 'logs:read' } })).status).toBe(403);

    const callback = await decide(viewer, consent, { grant: ['logs:read'] });
    const params = oauth.validateAuthResponse(as, client, callback, request.state);
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT_URI, request.verifier, insecure));
    expect(tokens.scope).toBe('logs:read');
    expect((await call(api.url, 'GET', '/api/v2/logs', { key: tokens.access_token })).status).toBe(200);
    expect((await respond(tokens.access_token, t)).status).toBe(403);

    const second = await authorizationUrl(as, client, { resource: API(), scopes: ['logs:read'] });
    const deniedAt = await decide(viewer, await consentPage(viewer, second.url), 'deny');
    expect(deniedAt.searchParams.get('error')).toBe('access_denied');
    expect(deniedAt.searchParams.get('iss')).toBe(api.url);
  });

  it("revoking a member ends their tokens and their refresh", async () => {
    const t = await tenant();
    const m = await member(t, 'developer');
    const { as, client, tokens } = await connect(m, { resource: API(), scopes: ['logs:read'], grant: ['logs:read'] });
    expect((await call(api.url, 'GET', '/api/v2/logs', { key: tokens.access_token })).status).toBe(200);

    expect(await admin.revokeMember({ id: m.id })).toMatchObject({ id: m.id, oauth_rows_deleted: expect.any(Number) });
    forgetCredentials(); // this instance's 5 s cache; the revocation itself is immediate in the database
    expect((await call(api.url, 'GET', '/api/v2/logs', { key: tokens.access_token })).status).toBe(401);
    const refresh = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure);
    expect(refresh.status).toBe(400);
    // And the dashboard session ended with them.
    expect((await m.browser.go('/dashboard/usage')).location).toMatch(/\/dashboard\/sign-in/);
  });

  it('registration is open to public clients with safe redirect URIs only; metadata and keys are stable', async () => {
    const as = await discover(MCP());
    const register = (metadata: Record<string, unknown>) => fetch(as.registration_endpoint!, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(metadata) });
    const plainHttp = await register({ redirect_uris: ['http://client.example/callback'], token_endpoint_auth_method: 'none' });
    expect(plainHttp.status).toBe(400);
    expect(((await plainHttp.json()) as { error: string }).error).toBe('invalid_redirect_uri');
    const confidential = await register({ redirect_uris: ['https://client.example/callback'], token_endpoint_auth_method: 'client_secret_basic' });
    expect(confidential.status).toBe(400);
    expect((await register({ redirect_uris: ['https://client.example/callback'], token_endpoint_auth_method: 'none' })).status).toBe(201);

    const mcp = (await (await fetch(`${api.url}/.well-known/oauth-protected-resource/mcp`)).json()) as { scopes_supported: string[] };
    expect(mcp).toMatchObject({ resource: MCP(), authorization_servers: [api.url] });
    expect(mcp.scopes_supported).toContain('mcp:connect');
    expect(wwwAuthenticate('mcp', { error: 'insufficient_scope', scope: ['mcp:connect', 'agents:run'] })).toBe(
      `Bearer resource_metadata="${api.url}/.well-known/oauth-protected-resource/mcp", error="insufficient_scope", scope="mcp:connect agents:run"`,
    );

    // Another process (or instance) derives the same signing key from SIGNING_SECRET.
    const before = (await (await fetch(as.jwks_uri!)).json()) as { keys: object[] };
    resetOAuthProvider();
    expect(await (await fetch(as.jwks_uri!)).json()).toEqual(before);
    expect(before.keys).toHaveLength(1);
    expect(before.keys[0]).not.toHaveProperty('d');
  });
  it('a code redeemed twice at once gives tokens once', async () => {
    const t = await tenant();
    const m = await member(t, 'owner');
    const as = await discover(API());
    const client = await register(as);
    const request = await authorizationUrl(as, client, { resource: API(), scopes: ['logs:read'] });
    const params = oauth.validateAuthResponse(as, client, await decide(m, await consentPage(m, request.url), { grant: ['logs:read'] }), request.state);
    const redeem = () => oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT_URI, request.verifier, insecure);
    const answers = await Promise.all([redeem(), redeem(), redeem()]);
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    for (const refused of answers.filter((a) => a.status !== 200)) expect(((await refused.json()) as { error: string }).error).toBe('invalid_grant');
  });

  it('counts registrations and authorization requests per client address', async () => {
    const address = `203.0.113.${Math.floor(Math.random() * 250) + 1}`;
    const registerFrom = () =>
      fetch(`${api.url}/oauth/reg`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': address },
        body: JSON.stringify({ redirect_uris: ['https://client.example/callback'], token_endpoint_auth_method: 'none' }),
      });
    const { statuses, refused } = await inOneRateWindow(async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 31; i++) statuses.push((await registerFrom()).status);
      return { statuses, refused: await registerFrom() };
    });
    expect(statuses.slice(0, 30).every((s) => s === 201)).toBe(true);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    // Another address is not held back by this one.
    const other = await fetch(`${api.url}/oauth/reg`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.7' }, body: JSON.stringify({ redirect_uris: ['https://client.example/callback'], token_endpoint_auth_method: 'none' }) });
    expect(other.status).toBe(201);
  });
});

describe('work left to run through an OAuth token', () => {
  it('a schedule created with a member’s access token pauses itself once that grant is revoked', async () => {
    const t = await tenant();
    const m = await member(t, 'developer');
    const { tokens } = await connect(m, { resource: API(), scopes: ['schedules:write', 'agents:run'], grant: ['schedules:write', 'agents:run'] });
    const created = await call(api.url, 'POST', '/api/v2/schedules', { key: tokens.access_token, body: { agent: t.agent, run: { input: 'digest' }, interval_seconds: 366 * 86_400 } });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const [{ grant }] = await db().query<{ grant: string | null }>('SELECT created_by_grant AS grant FROM schedules WHERE public_id = :id', { replacements: { id }, type: QueryTypes.SELECT });
    expect(grant).toEqual(expect.any(String));
    const firing = (n: number) => ({ scheduleId: id, firingId: `${id}-${n}`, firedAt: Date.parse('2026-11-27T08:00:00Z') + n * 1000 });
    const planned = await fireSchedule(firing(1));
    expect(planned.run).toBeDefined();
    await db().query('DELETE FROM credit_reservations WHERE run_public_id = :run', { replacements: { run: planned.run!.runId } });

    // Revoked as the provider revokes a grant: the grant itself, and every token it gave.
    await new PostgresAdapter('Grant').destroy(grant!);
    await revokeGrant(grant!);
    expect(await fireSchedule(firing(2))).toEqual({});
    const [row] = await db().query<{ paused: boolean; paused_reason: { code: string } }>('SELECT paused, paused_reason FROM schedules WHERE public_id = :id', { replacements: { id }, type: QueryTypes.SELECT });
    expect(row).toMatchObject({ paused: true, paused_reason: { code: 'creator_cannot_run' } });
  });
});
