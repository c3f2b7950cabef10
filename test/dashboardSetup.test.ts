import { randomInt } from 'node:crypto';
import { setClock } from '../domain/clock';
import { withPasswordSlot } from '../api/dashboard/passwordSlots';
import { useApi } from './support/stack';

process.env.AUTH_FAILURE_LIMIT = '2';
const api = useApi();

/** A set-up form post as a browser sends it, from `address`: the form cookie and token from the sign-in page first. */
async function postSetup(address: string, token: string): Promise<Response> {
  const page = await fetch(`${api.url}/dashboard/sign-in`, { headers: { 'x-forwarded-for': address } });
  const cookie = (page.headers.get('set-cookie') ?? '').split(';')[0];
  const formToken = /name="_csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? '';
  const body = new URLSearchParams({ _csrf: formToken, token, password: 'a long enough password', confirm: 'a long enough password' });
  return fetch(`${api.url}/dashboard/setup`, { method: 'POST', redirect: 'manual', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': address }, body });
}

describe('the set-up form', () => {
  it('looks the link up before hashing the password, and counts unknown links against the address', async () => {
    // A window of this test's own, which no request of it outlasts.
    const window = 30_000_000 + randomInt(1_000_000_000);
    setClock(() => window * 60_000 + 30_000);
    // Every password slot taken (2 hashing, 8 waiting), as a flood of set-ups would: a set-up that
    // hashed before looking its link up would be refused 429 here instead of 404.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const slots = Array.from({ length: 10 }, () => withPasswordSlot(() => held));
    const address = `203.0.113.${randomInt(1, 250)}`;
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await postSetup(address, `unknown-link-${i}`)).status);
      // Two failures allowed, the third counted past the limit: the fourth is refused before anything is read.
      expect(statuses).toEqual([404, 404, 404, 429]);
    } finally {
      release();
      await Promise.all(slots);
      setClock();
    }
  });
});
