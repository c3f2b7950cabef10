import { randomInt } from 'node:crypto';
import { setClock } from '../domain/clock';
import { QueryTypes } from 'sequelize';
import * as admin from '../admin/commands';
import { db } from '../db/sequelize';
import { call, tenant, until, useApi } from './support/stack';
import { childApi, type Child } from './support/childProcesses';
import { tcpProxy, type TcpProxy } from './support/tcpProxy';

process.env.AUTH_FAILURE_LIMIT = '2';
const api = useApi();

const unknownKey = () => `tgcc_${randomInt(1e12).toString().padStart(43, 'y')}`;

describe('an address that keeps presenting unknown keys', () => {
  it('is refused for credentials that cannot resolve, while every live key from it is served', async () => {
    // A window of this test's own, which no request of it outlasts.
    const window = 30_000_000 + randomInt(1_000_000_000);
    setClock(() => window * 60_000 + 30_000);
    try {
      const [merchant, other] = [await tenant({ scopes: ['logs:read'] }), await tenant({ scopes: ['logs:read'] })];
      // One egress address shared by a partner's backend and a prober.
      const shared = `198.51.100.${randomInt(1, 250)}`;
      const logs = (key: string) => call(api.url, 'GET', '/api/v2/logs', { key, headers: { 'x-forwarded-for': shared } });
      expect((await logs(merchant.key)).status).toBe(200);
      const probes: number[] = [];
      for (let i = 0; i < 3; i++) probes.push((await logs(unknownKey())).status);
      expect(probes).toEqual([401, 401, 401]);
      // Past the limit: the key in use still works; a guess is refused 429 with Retry-After, unlooked-up.
      expect((await logs(merchant.key)).status).toBe(200);
      const refused = await logs(unknownKey());
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe('rate_limited');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      // A live key this process has never seen resolve is served too: it is looked up (the filter of live keys admits it).
      expect((await logs(other.key)).status).toBe(200);
      // A request with no credential guesses nothing: 401 as from anywhere, while guesses stay refused.
      const bare = await call(api.url, 'GET', '/api/v2/logs', { headers: { 'x-forwarded-for': shared } });
      expect(bare.status).toBe(401);
      expect(bare.body.error).toMatchObject({ code: 'authentication_error', request_id: expect.any(String) });
      expect(bare.headers.get('retry-after')).toBeNull();
      expect((await logs(unknownKey())).status).toBe(429);
    } finally {
      setClock();
    }
  });
});

describe('a throttled address, on an API instance started after the flood', () => {
  const database = new URL(process.env.DATABASE_URL!);
  let proxy: TcpProxy;
  let fresh: Child & { url: string };
  beforeAll(async () => {
    proxy = await tcpProxy({ host: database.hostname, port: Number(database.port) });
  });
  afterAll(async () => {
    await fresh?.stop();
    await proxy.close();
  });

  it('serves a key created before it started and one created after the flood, refuses 10,000 random keys without a query, and stops a revoked key', async () => {
    const before = await tenant({ scopes: ['logs:read'] });
    // Its database through a proxy that counts what is sent to it.
    const url = proxy.through(database.toString());
    // Refused for an hour once past the limit: the 10,000 guesses below never outlast it, however slow the machine.
    fresh = await childApi({ DATABASE_URL: url, AUTH_FAILURE_LIMIT: '3', AUTH_FAILURE_WINDOW_S: '3600' });
    const address = `203.0.113.${randomInt(1, 250)}`;
    const logs = (key: string) => call(fresh.url, 'GET', '/api/v2/logs', { key, headers: { 'x-forwarded-for': address } });
    for (let i = 0; i < 4; i++) await logs(unknownKey());
    expect((await logs(unknownKey())).status).toBe(429);

    expect((await logs(before.key)).status).toBe(200);
    const after = await tenant({ scopes: ['logs:read'] });
    // Announced to every instance as it is created: this one has never seen it.
    expect((await until(async () => ((await logs(after.key)).status === 200 ? true : undefined), 'the new key to be served'))).toBe(true);

    // The served keys' last use is written off the request's path: once it is, nothing else is under way.
    const lastUsed = (t: { workspace: string }) =>
      db().query<{ used: boolean }>('SELECT k.last_used_at IS NOT NULL AS used FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id WHERE w.public_id = :ws', { replacements: { ws: t.workspace }, type: QueryTypes.SELECT });
    await until(async () => ((await lastUsed(before))[0].used && (await lastUsed(after))[0].used ? true : undefined), 'the keys’ last use to be written');
    // Once the filter is built, a prober's guesses cost no database query.
    const sent = proxy.bytesUp;
    const statuses = new Map<number, number>();
    for (let batch = 0; batch < 100; batch++) {
      const answers = await Promise.all(Array.from({ length: 100 }, () => logs(unknownKey())));
      for (const { status } of answers) statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
    expect([...statuses]).toEqual([[429, 10_000]]);
    // No query per guess: one authentication lookup sends about 100 bytes, so 10,000 would send a
    // megabyte. What the instance does on its own meanwhile (a filter rebuild, a pool closing an idle
    // connection on a slow machine) is a few such statements at most.
    expect(proxy.bytesUp - sent).toBeLessThan(1_000);

    // Revoked: refused once the instance's copy of the key lapses (CREDENTIAL_CACHE_MS, docs/api.md).
    const key = (await db().query<{ id: string }>('SELECT k.public_id AS id FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id WHERE w.public_id = :ws', { replacements: { ws: after.workspace }, type: QueryTypes.SELECT }))[0].id;
    await admin.revokeKey({ id: key });
    await until(async () => ((await logs(after.key)).status === 429 ? true : undefined), 'the revoked key to be refused');
  });
});
