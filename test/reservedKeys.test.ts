import { call, closeAll, startApi } from './support/stack';

let api: { url: string; close(): Promise<void> };
beforeAll(async () => {
  api = await startApi();
});
afterAll(async () => {
  await api.close();
  await closeAll();
});

/**
 * A key named after Object.prototype's members (`__proto__`, `constructor`, `toString`, …) made a
 * schema's field lookup find the prototype's member and throw: a 500 before authentication. Every
 * part of every request now refuses such a key with a 400 in the envelope.
 */
describe('reserved keys', () => {
  const cases: [string, string, string][] = [
    ['POST', '/codec/decode', '{"__proto__":{"payloads":[]},"payloads":[]}'],
    ['POST', '/api/v2/responses', '{"constructor":1,"agent":"agt_x","input":"hi"}'],
    ['POST', '/api/v2/responses', '{"agent":"agt_x","input":"hi","metadata":{"toString":"x"}}'],
    ['POST', '/api/v2/jobs', '{"hasOwnProperty":true,"type":"runs.batch"}'],
    ['GET', '/api/v2/logs?constructor=1', ''],
  ];
  it.each(cases)('%s %s with %s is a 400 invalid_request', async (method, path, raw) => {
    const res = await call(api.url, method, path, { key: 'tgcc_not_a_real_key', ...(raw && { raw }) });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('reserved key') });
  });
});
