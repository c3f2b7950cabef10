import { randomInt } from 'node:crypto';
import { setClock } from '../domain/clock';
import { call, tenant, useApi } from './support/stack';

process.env.AUTH_FAILURE_LIMIT = '2';
const api = useApi();

const unknownKey = () => `tgcc_${randomInt(1e12).toString().padStart(43, 'y')}`;

describe('an address that keeps presenting unknown keys', () => {
  it('is refused for credentials not known to be valid, while a key already in use from it carries on', async () => {
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
      // A key this process has never seen resolve is not looked up either.
      expect((await logs(other.key)).status).toBe(429);
    } finally {
      setClock();
    }
  });
});
