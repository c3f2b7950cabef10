import { randomInt } from 'node:crypto';
import { setClock } from '../domain/clock';
import { resetConfig } from '../infra/config';
import { call, closeAll, startApi } from './support/stack';

/** A key shaped like a workspace key (the prefix and 43 base64url characters) that resolves to nothing. */
const unknownKey = (i: number) => `tgcc_${String(i).padStart(43, 'x')}`;

async function failuresUntilRefused(url: string, forwardedFor: (i: number) => string): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) statuses.push((await call(url, 'GET', '/api/v2/logs', { key: unknownKey(i), headers: { 'x-forwarded-for': forwardedFor(i) } })).status);
  return statuses;
}

describe('the client address', () => {
  // Each test counts in a 60 s window of its own, never met before (a rerun, another file) and never
  // ending between its requests: the limiter's clock is pinned inside it.
  beforeEach(() => {
    const window = 30_000_000 + randomInt(1_000_000_000);
    setClock(() => window * 60_000 + 30_000);
  });
  afterEach(() => setClock());
  afterAll(closeAll);

  it('ignores X-Forwarded-For with no proxy named (the default): a client cannot pick a new address per request to escape per-address limits', async () => {
    Object.assign(process.env, { TRUST_PROXY_HOPS: '0', AUTH_FAILURE_LIMIT: '3' });
    resetConfig();
    const api = await startApi();
    try {
      // Every request from this socket's address, whatever the header says: past the third failure, it is refused.
      expect(await failuresUntilRefused(api.url, (i) => `203.0.113.${100 + i}`)).toEqual([401, 401, 401, 401, 429]);
    } finally {
      await api.close();
    }
  });

  it('behind TRUST_PROXY_HOPS proxies, is the address the outermost of them saw, never one the client wrote before it', async () => {
    Object.assign(process.env, { TRUST_PROXY_HOPS: '1', AUTH_FAILURE_LIMIT: '3' });
    resetConfig();
    const api = await startApi();
    try {
      // One proxy: the last entry is the address it saw. The client's own entries before it change nothing.
      expect(await failuresUntilRefused(api.url, (i) => `198.51.100.${i}, 203.0.113.77`)).toEqual([401, 401, 401, 401, 429]);
      // Five clients behind the proxy each have their own budget.
      expect(await failuresUntilRefused(api.url, (i) => `203.0.113.${10 + i}`)).toEqual([401, 401, 401, 401, 401]);
    } finally {
      await api.close();
    }
  });
});
