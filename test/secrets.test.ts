import { spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { QueryTypes } from 'sequelize';
import { createWorkspaceKey } from '../admin/commands';
import { db } from '../db/sequelize';
import { statement, transaction } from '../db/sql';
import { findWorkspace } from '../db/workspaces';
import { listSecrets, openSecret, resealWorkspaceSecrets } from '../db/workspaceSecrets';
import { MAX_SECRET_BYTES } from '../domain/secrets';
import { isSealed, keyRing, open, sealedKeyId, type KeyRing } from '../infra/encryption';
import { logger } from '../infra/logger';
import { fieldValue, member, PASSWORD, useOAuthFlow, type Member } from './support/oauthFlow';
import { call, tenant, useApi, type Tenant } from './support/stack';

const api = useApi();
useOAuthFlow(api);

const CLI = path.join(__dirname, '../dist/admin/cli.js');
const SCOPES = ['secrets:read', 'secrets:write'];

/** The admin CLI as an operator runs it: its stdout, stderr and exit code. */
function admin(...args: string[]): { stdout: string; stderr: string; status: number | null } {
  return adminWithInput('', ...args);
}

function adminWithInput(input: string, ...args: string[]): { stdout: string; stderr: string; status: number | null } {
  const { stdout, stderr, status } = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: process.env, input });
  return { stdout, stderr, status };
}

/** A value no answer could contain by chance. */
const secretValue = () => `tok_${randomBytes(24).toString('base64url')}`;

const workspaceKey = async (t: Tenant) => (await findWorkspace(t.workspace))!.id;

async function sealedRow(t: Tenant, name: string): Promise<Buffer | undefined> {
  const rows = await db().query<{ sealed: Buffer }>(
    'SELECT s.sealed FROM workspace_secrets s JOIN workspaces w ON w.id = s.workspace_id WHERE w.public_id = :workspace AND s.name = :name',
    { replacements: { workspace: t.workspace, name }, type: QueryTypes.SELECT },
  );
  return rows[0]?.sealed;
}

/** Where the secrets of these tests are bound: the API requires an origin with every value. */
const ORIGIN = 'https://mcp.example.com';
const put = (key: string, name: string, body: unknown) =>
  call(api.url, 'PUT', `/api/v2/secrets/${name}`, { key, body: body && typeof body === 'object' && !('origin' in body) ? { ...body, origin: ORIGIN } : body });
const list = (key: string) => call(api.url, 'GET', '/api/v2/secrets', { key });
const remove = (key: string, name: string) => call(api.url, 'DELETE', `/api/v2/secrets/${name}`, { key });

describe('admin secret', () => {
  it('set prints only the name, seals the value at rest, and list and delete never show it', async () => {
    const t = await tenant({ scopes: SCOPES });
    const value = secretValue();
    const set = admin('secret', 'set', '--workspace', t.workspace, '--name', 'crm.token', '--value', value);
    expect([set.status, set.stdout, set.stderr]).toEqual([0, '{"name":"crm.token"}\n', '']);

    const sealed = (await sealedRow(t, 'crm.token'))!;
    expect(isSealed(sealed)).toBe(true);
    expect(sealed.includes(Buffer.from(value))).toBe(false);
    expect(sealed.toString('latin1')).not.toContain(value);
    expect(open(sealed).toString('utf8')).toBe(value);
    expect(await openSecret(await workspaceKey(t), 'crm.token')).toBe(value);

    // Set again: the value is replaced, the secret keeps its creation time.
    const replacement = secretValue();
    expect(admin('secret', 'set', '--workspace', t.workspace, '--name', 'crm.token', '--value', replacement).stdout).toBe('{"name":"crm.token"}\n');
    expect(await openSecret(await workspaceKey(t), 'crm.token')).toBe(replacement);

    const listed = admin('secret', 'list', '--workspace', t.workspace);
    expect(listed.status).toBe(0);
    expect(listed.stdout).not.toContain(value);
    expect(listed.stdout).not.toContain(replacement);
    const { workspace, secrets } = JSON.parse(listed.stdout) as { workspace: string; secrets: { name: string; created_at: string; updated_at: string }[] };
    expect(workspace).toBe(t.workspace);
    expect(secrets).toEqual([{ name: 'crm.token', origin: null, created_at: expect.any(String), updated_at: expect.any(String) }]);
    expect(Date.parse(secrets[0].updated_at)).toBeGreaterThan(Date.parse(secrets[0].created_at));
    // Read from standard input with `--value -`: in no process list.
    const piped = secretValue();
    expect(adminWithInput(`${piped}\n`, 'secret', 'set', '--workspace', t.workspace, '--name', 'piped', '--value', '-').stdout).toBe('{"name":"piped"}\n');
    expect(await openSecret(await workspaceKey(t), 'piped')).toBe(piped);
    // Bound to an origin: sent there alone.
    expect(admin('secret', 'set', '--workspace', t.workspace, '--name', 'crm.token', '--value', replacement, '--origin', 'https://mcp.example.com').stdout).toBe('{"name":"crm.token"}\n');
    expect(JSON.parse(admin('secret', 'list', '--workspace', t.workspace).stdout).secrets[0].origin).toBe('https://mcp.example.com');
    const badOrigin = admin('secret', 'set', '--workspace', t.workspace, '--name', 'crm.token', '--value', replacement, '--origin', 'https://mcp.example.com/mcp');
    expect([badOrigin.status, badOrigin.stdout, JSON.parse(badOrigin.stderr).error.message]).toEqual([2, '', expect.stringMatching(/origin must be an origin/)]);

    expect(admin('secret', 'delete', '--workspace', t.workspace, '--name', 'crm.token').stdout).toBe('{"name":"crm.token","deleted":true}\n');
    expect(await sealedRow(t, 'crm.token')).toBeUndefined();
    const again = admin('secret', 'delete', '--workspace', t.workspace, '--name', 'crm.token');
    expect([again.status, again.stdout]).toEqual([2, '']);
    expect(JSON.parse(again.stderr).error.message).toMatch(/no secret "crm.token"/);
  });

  it('refuses a bad name, a value too long, or an unknown workspace, storing nothing and never echoing the value', async () => {
    const t = await tenant({ scopes: SCOPES });
    const tooLong = `${secretValue()}${'x'.repeat(MAX_SECRET_BYTES)}`;
    const refusals = [
      ['--workspace', t.workspace, '--name', 'has space', '--value', secretValue()],
      ['--workspace', t.workspace, '--name', 'x'.repeat(65), '--value', secretValue()],
      ['--workspace', t.workspace, '--name', 'ok', '--value', tooLong],
      ['--workspace', 'ws_01hzzzzzzzzzzzzzzzzzzzzzzz', '--name', 'ok', '--value', secretValue()],
      ['--workspace', t.workspace, '--name', 'ok'],
    ];
    const messages = [/--name must be 1 to 64/, /--name must be 1 to 64/, /--value must be a non-empty string of at most 8192 bytes/, /no workspace/, /missing --value/];
    for (const [i, args] of refusals.entries()) {
      const refused = admin('secret', 'set', ...args);
      expect([refused.status, refused.stdout]).toEqual([2, '']);
      expect(JSON.parse(refused.stderr).error.message).toMatch(messages[i]);
      const value = args[args.indexOf('--value') + 1];
      if (args.includes('--value')) expect(refused.stderr).not.toContain(value.slice(0, 30));
    }
    expect(await listSecrets(await workspaceKey(t))).toEqual([]);
    // The usage names the commands.
    expect(JSON.parse(admin('secret', 'get').stderr).error.message).toContain('secret set --workspace ID --name NAME --value VALUE');
  });
});

describe('the secrets endpoints', () => {
  it('binds a secret to an origin, or to an origin and a path prefix ending in "/", written canonically; refuses anything else', async () => {
    const t = await tenant({ scopes: SCOPES });
    for (const origin of ['https://mcp.example.com/tenant-a/', 'http://127.0.0.1:8080/a/b/', 'https://mcp.example.com']) {
      const set = await put(t.key, 'bound', { value: secretValue(), origin });
      expect([set.status, set.body.origin]).toEqual([200, origin]);
    }
    // No prefix without its closing "/", no query, fragment or user, no dot segments or encoded separators, nothing but the parser's own spelling.
    for (const origin of ['https://mcp.example.com/tenant-a', 'https://mcp.example.com/', 'https://mcp.example.com/a/?x=1', 'https://mcp.example.com/a/#f', 'https://u@mcp.example.com/a/', 'https://mcp.example.com/a/../b/', 'https://mcp.example.com/a%2Fb/', 'https://MCP.example.com/a/', 'ftp://mcp.example.com/a/']) {
      const refused = await put(t.key, 'bound', { value: secretValue(), origin });
      expect([origin, refused.status, refused.body.error.message]).toEqual([origin, 400, expect.stringMatching(/^origin must be an origin, http\(s\):\/\/host\[:port\], or an origin and a path prefix/)]);
    }
    expect((await list(t.key)).body.data).toEqual([expect.objectContaining({ name: 'bound', origin: 'https://mcp.example.com' })]);
  });

  it('set, list and delete by name with the scopes; no answer carries a value', async () => {
    const t = await tenant({ scopes: SCOPES });
    const value = secretValue();
    const set = await put(t.key, 'mcp_github', { value });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ object: 'secret', name: 'mcp_github', origin: ORIGIN, created_at: expect.any(String), updated_at: expect.any(String) });
    expect(set.text).not.toContain(value);
    expect(await openSecret(await workspaceKey(t), 'mcp_github')).toBe(value);
    expect((await sealedRow(t, 'mcp_github'))!.includes(Buffer.from(value))).toBe(false);

    const replacement = secretValue();
    const replaced = await put(t.key, 'mcp_github', { value: replacement });
    expect(replaced.status).toBe(200);
    expect(replaced.body.created_at).toBe(set.body.created_at);
    expect(Date.parse(replaced.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(set.body.updated_at));
    expect(await openSecret(await workspaceKey(t), 'mcp_github')).toBe(replacement);
    expect((await put(t.key, 'Other-1.x', { value: secretValue() })).status).toBe(200);

    const listed = await list(t.key);
    expect(listed.status).toBe(200);
    // By code point: upper case first.
    expect(listed.body).toEqual({ object: 'list', data: [expect.objectContaining({ name: 'Other-1.x' }), replaced.body], has_more: false });
    expect(listed.text).not.toContain(value);
    expect(listed.text).not.toContain(replacement);

    const deleted = await remove(t.key, 'mcp_github');
    expect([deleted.status, deleted.body]).toEqual([200, { object: 'secret', name: 'mcp_github', deleted: true }]);
    expect(await openSecret(await workspaceKey(t), 'mcp_github')).toBeUndefined();
    const missing = await remove(t.key, 'mcp_github');
    expect([missing.status, missing.body.error.code]).toEqual([404, 'secret_not_found']);
    expect((await list(t.key)).body.data.map((s: { name: string }) => s.name)).toEqual(['Other-1.x']);
  });

  it('needs secrets:write to set or delete and secrets:read to list (neither implies the other): 403 permission_denied, nothing changed', async () => {
    const owner = await tenant({ scopes: SCOPES });
    const value = secretValue();
    expect((await put(owner.key, 'kept', { value })).status).toBe(200);
    const keyOf = async (scopes: string) => (await createWorkspaceKey({ workspace: owner.workspace, scopes })).key;
    const none = await keyOf('responses:create');
    const reader = await keyOf('secrets:read');
    const writer = await keyOf('secrets:write');

    for (const key of [none, reader]) {
      for (const refused of [await put(key, 'kept', { value: 'changed' }), await put(key, 'fresh', { value: 'new' }), await remove(key, 'kept')]) {
        expect([refused.status, refused.body.error.code]).toEqual([403, 'permission_denied']);
        expect(refused.body.error.message).toContain('secrets:write');
      }
    }
    for (const key of [none, writer]) {
      const refused = await list(key);
      expect([refused.status, refused.body.error.code]).toEqual([403, 'permission_denied']);
      expect(refused.body.error.message).toContain('secrets:read');
    }
    expect((await list(reader)).body.data.map((s: { name: string }) => s.name)).toEqual(['kept']);
    expect(await openSecret(await workspaceKey(owner), 'kept')).toBe(value);
    expect((await put(writer, 'fresh', { value: secretValue() })).status).toBe(200);
    expect((await remove(writer, 'fresh')).status).toBe(200);
  });

  it('holds at most 100 a workspace, even when the last place is asked for twice at once: replacing a value is always taken', async () => {
    const t = await tenant({ scopes: SCOPES });
    for (let i = 0; i < 98; i++) expect((await put(t.key, `s${i}`, { value: 'v' })).status).toBe(200);
    const racing = await Promise.all([put(t.key, 'last-a', { value: 'v' }), put(t.key, 'last-b', { value: 'v' }), put(t.key, 'last-c', { value: 'v' })]);
    expect(racing.map((r) => r.status).sort()).toEqual([200, 200, 409]);
    expect(racing.find((r) => r.status === 409)!.body.error.code).toBe('secret_limit_reached');
    expect((await list(t.key)).body.data).toHaveLength(100);
    expect((await put(t.key, 's0', { value: 'replaced' })).status).toBe(200);
    expect((await put(t.key, 'one-more', { value: 'v' })).status).toBe(409);
  });

  it('keeps each workspace to its own: another cannot see, delete or overwrite them', async () => {
    const mine = await tenant({ scopes: SCOPES });
    const theirs = await tenant({ scopes: SCOPES });
    const value = secretValue();
    expect((await put(mine.key, 'shared-name', { value })).status).toBe(200);

    expect((await list(theirs.key)).body.data).toEqual([]);
    const refused = await remove(theirs.key, 'shared-name');
    const missing = await remove(theirs.key, 'never-set');
    expect([refused.status, refused.body.error.code]).toEqual([404, 'secret_not_found']);
    // Byte for byte like a name nobody set (but for the request id).
    expect(refused.text.replace(/req_[0-9a-z]+/, '')).toBe(missing.text.replace(/req_[0-9a-z]+/, ''));

    // The same name in another workspace is another secret.
    const other = secretValue();
    expect((await put(theirs.key, 'shared-name', { value: other })).status).toBe(200);
    expect(await openSecret(await workspaceKey(mine), 'shared-name')).toBe(value);
    expect(await openSecret(await workspaceKey(theirs), 'shared-name')).toBe(other);
    expect((await list(mine.key)).body.data.map((s: { name: string }) => s.name)).toEqual(['shared-name']);
  });

  it('refuses a bad name or value with 400 invalid_request naming the field, storing nothing; the value is in no answer and no log line', async () => {
    const t = await tenant({ scopes: SCOPES });
    const spies = (['info', 'warn', 'error', 'debug'] as const).map((level) => jest.spyOn(logger, level));
    const tooLong = `${secretValue()}${'Q'.repeat(MAX_SECRET_BYTES)}`;
    // 4097 two-byte characters: within 8192 characters, beyond 8192 bytes.
    const wideTooLong = 'é'.repeat(MAX_SECRET_BYTES / 2 + 1);
    const cases: [string, unknown, RegExp][] = [
      ['has%20space', { value: secretValue() }, /^name must be 1 to 64 characters/],
      ['n'.repeat(65), { value: secretValue() }, /^name must be 1 to 64 characters/],
      ['sl%2Fash', { value: secretValue() }, /^name must be 1 to 64 characters/],
      ['ok', { value: tooLong }, /^value must be a non-empty string of at most 8192 bytes/],
      ['ok', { value: wideTooLong }, /^value must be a non-empty string of at most 8192 bytes/],
      ['ok', { value: '' }, /^value must be/],
      ['ok', { value: 987654321 }, /^value must be/],
      ['ok', { value: null }, /^value must be/],
      ['ok', {}, /^value must be/],
      ['ok', { value: 'fine', name: 'other' }, /^unknown key: name/],
      // Sent as a header, it could never go: control characters are refused.
      ['ok', { value: 'sk-live-CTRL\nline' }, /no control characters/],
    ];
    try {
      for (const [name, body, message] of cases) {
        const refused = await put(t.key, name, body);
        expect([refused.status, refused.body.error.code]).toEqual([400, 'invalid_request']);
        expect(refused.body.error.message).toMatch(message);
        expect(refused.text).not.toContain('QQQQQQQQQQ');
        expect(refused.text).not.toContain('ééééé');
        expect(refused.text).not.toContain('987654321');
        expect(refused.text).not.toContain('sk-live-CTRL');
      }
      // Through the API a value always comes with the one origin it is sent to.
      const unbound = await call(api.url, 'PUT', '/api/v2/secrets/ok', { key: t.key, body: { value: secretValue() } });
      expect([unbound.status, unbound.body.error.message]).toEqual([400, expect.stringMatching(/^origin must be an origin, http\(s\):\/\/host\[:port\], or an origin and a path prefix/)]);
      expect(await listSecrets(await workspaceKey(t))).toEqual([]);

      // The limit is in bytes, inclusive.
      const largest = secretValue() + 'y'.repeat(MAX_SECRET_BYTES - secretValue().length);
      expect(Buffer.byteLength(largest)).toBe(MAX_SECRET_BYTES);
      const accepted = await put(t.key, 'largest', { value: largest });
      expect(accepted.status).toBe(200);
      expect(accepted.text).not.toContain(largest.slice(0, 30));
      expect(await openSecret(await workspaceKey(t), 'largest')).toBe(largest);

      const logged = JSON.stringify(spies.flatMap((s) => s.mock.calls));
      expect(spies[0].mock.calls.length).toBeGreaterThan(0);
      expect(logged).toContain('/api/v2/secrets/largest');
      for (const leak of [largest.slice(0, 30), 'QQQQQQQQQQ', 'ééééé', '987654321']) expect(logged).not.toContain(leak);
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  });
});

const ROW = statement('SELECT sealed FROM workspace_secrets WHERE workspace_id = $1 AND name = $2');

describe('key rotation', () => {
  it('re-seals a secret sealed with an older key under the active one, which then opens it', async () => {
    const t = await tenant({ scopes: SCOPES });
    const value = secretValue();
    expect((await put(t.key, 'rotating', { value })).status).toBe(200);
    const current = keyRing();
    expect(sealedKeyId((await sealedRow(t, 'rotating'))!)).toBe(current.active.id);
    const rotated: KeyRing = { active: { id: `next-${randomUUID().slice(0, 8)}`, key: randomBytes(32) }, byId: new Map(current.byId) };
    rotated.byId.set(rotated.active.id, rotated.active.key);

    // Inside a transaction rolled back at the end: the other files' secrets stay sealed with the process's key.
    const rolledBack = new Error('roll back');
    await expect(
      transaction(async (tx) => {
        const outcome = await resealWorkspaceSecrets(rotated, tx);
        expect(outcome.resealed).toBeGreaterThanOrEqual(1);
        expect(outcome.unopenable).toEqual([]);
        const [row] = await tx.rows<{ sealed: Buffer }>(ROW, [await workspaceKey(t), 'rotating']);
        expect(sealedKeyId(row.sealed)).toBe(rotated.active.id);
        expect(open(row.sealed, { active: rotated.active, byId: new Map([[rotated.active.id, rotated.active.key]]) }).toString('utf8')).toBe(value);
        // Nothing of this workspace's left for a second pass (other files' secrets, set meanwhile, may be).
        await resealWorkspaceSecrets(rotated, tx);
        const [again] = await tx.rows<{ sealed: Buffer }>(ROW, [await workspaceKey(t), 'rotating']);
        expect(again.sealed.equals(row.sealed)).toBe(true);
        throw rolledBack;
      }),
    ).rejects.toBe(rolledBack);
    expect(sealedKeyId((await sealedRow(t, 'rotating'))!)).toBe(current.active.id);
  });
});

describe('the dashboard Secrets page', () => {
  async function signedIn(t: Tenant, role: string): Promise<Member & { page: string }> {
    const m = await member(t, role);
    const form = await m.browser.go('/dashboard/sign-in?next=/dashboard/secrets');
    const done = await m.browser.go('/dashboard/sign-in', { form: { _csrf: fieldValue(form.html, '_csrf')!, next: '/dashboard/secrets', email: m.email, password: PASSWORD } });
    expect(done.location).toBe(`${api.url}/dashboard/secrets`);
    const page = await m.browser.go('/dashboard/secrets');
    expect(page.status).toBe(200);
    return { ...m, page: page.html };
  }

  it('lets an owner or developer set, replace and delete secrets by name, never showing a value; a viewer only sees names', async () => {
    const t = await tenant({ scopes: SCOPES });
    const developer = await signedIn(t, 'developer');
    expect(developer.page).toContain('Set a secret');
    const csrf = fieldValue(developer.page, '_csrf')!;
    const value = secretValue();

    const set = await developer.browser.go('/dashboard/secrets', { form: { _csrf: csrf, name: 'dash.token', value, origin: ORIGIN } });
    expect(set.status).toBe(200);
    expect(set.html).toContain('Secret dash.token set.');
    expect(set.html).toContain('data-secret="dash.token"');
    expect(set.html).not.toContain(value);
    expect(await openSecret(await workspaceKey(t), 'dash.token')).toBe(value);

    // A refused form shows the problem, keeps the name, drops the value.
    const tooLong = `${secretValue()}${'z'.repeat(MAX_SECRET_BYTES)}`;
    const refused = await developer.browser.go('/dashboard/secrets', { form: { _csrf: csrf, name: 'dash.token', value: tooLong, origin: ORIGIN } });
    expect(refused.status).toBe(400);
    expect(refused.html).toMatch(/value must be a non-empty string of at most 8192 bytes/);
    expect(refused.html).not.toContain(tooLong.slice(0, 30));
    expect((await developer.browser.go('/dashboard/secrets', { form: { _csrf: csrf, name: 'bad name', value, origin: ORIGIN } })).status).toBe(400);
    expect(await openSecret(await workspaceKey(t), 'dash.token')).toBe(value);
    // Without the session's CSRF token, nothing is set.
    expect((await developer.browser.go('/dashboard/secrets', { form: { _csrf: 'forged', name: 'forged', value, origin: ORIGIN } })).status).toBe(403);

    const viewer = await signedIn(t, 'viewer');
    expect(viewer.page).toContain('data-secret="dash.token"');
    expect(viewer.page).not.toContain('Set a secret');
    expect(viewer.page).not.toContain('/dashboard/secrets/delete');
    const viewerCsrf = fieldValue(viewer.page, '_csrf')!;
    expect((await viewer.browser.go('/dashboard/secrets', { form: { _csrf: viewerCsrf, name: 'viewer', value, origin: ORIGIN } })).status).toBe(403);
    expect((await viewer.browser.go('/dashboard/secrets/delete', { form: { _csrf: viewerCsrf, name: 'dash.token' } })).status).toBe(403);

    const owner = await signedIn(t, 'owner');
    const deleted = await owner.browser.go('/dashboard/secrets/delete', { form: { _csrf: fieldValue(owner.page, '_csrf')!, name: 'dash.token' } });
    expect([deleted.status, deleted.location]).toEqual([302, `${api.url}/dashboard/secrets`]);
    expect(await openSecret(await workspaceKey(t), 'dash.token')).toBeUndefined();
    expect((await owner.browser.go('/dashboard/secrets/delete', { form: { _csrf: fieldValue(owner.page, '_csrf')!, name: 'dash.token' } })).status).toBe(404);
  });
});
