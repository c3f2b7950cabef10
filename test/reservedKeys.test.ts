import { call, useApi } from './support/stack';

const api = useApi();

/**
 * A key named after Object.prototype's members (`__proto__`, `constructor`, `toString`, …) made a yup
 * object schema's field lookup find the prototype's member and throw: a 500 before authentication.
 * Where a schema would throw so, the key is refused as unknown with a 400 in the envelope; where the
 * body's reader takes unknown keys (the execution endpoints), it still does.
 */
describe('keys named after Object.prototype members', () => {
  const refused: [string, string, string, string][] = [
    ['POST', '/codec/decode', '{"__proto__":{"payloads":[]},"payloads":[]}', '__proto__'],
    ['POST', '/api/v2/jobs', '{"hasOwnProperty":true,"type":"runs.batch"}', 'hasOwnProperty'],
    ['POST', '/api/v2/reports', '{"toString":"x","name":"r"}', 'toString'],
    ['GET', '/api/v2/logs?constructor=1', '', 'constructor'],
  ];
  it.each(refused)('%s %s with %s is a 400 invalid_request naming the key', async (method, path, raw, key) => {
    const res = await call(api.url, method, path, { key: 'tgcc_not_a_real_key', ...(raw && { raw }) });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(new RegExp(`^unknown (key|query parameter): ${key}`)) });
  });

  it('are taken where unknown keys are (the execution endpoints): validation passes, and the bad key is what answers', async () => {
    const res = await call(api.url, 'POST', '/api/v2/responses', { key: 'tgcc_not_a_real_key', raw: '{"agent":"agt_x","input":"hi","constructor":1,"metadata":{"toString":"x"}}' });
    expect(res.status).toBe(401);
  });
});
