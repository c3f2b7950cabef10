import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { resetConfig } from '../infra/config';
import { TEMPORAL_CLI } from '../workers/temporalDevServer';
import { call, scriptModel, tenant, useApi } from './support/stack';
import { payloadsIn, plaintextOf, type WirePayload } from './support/payloads';

/**
 * The dev stack's Temporal UI decodes runs out of the box: `npm start` points the UI at the API's
 * codec endpoint (--ui-codec-endpoint) and lets its origin in (CODEC_ALLOWED_ORIGINS), and in
 * development mode, without CODEC_OPERATOR_TOKEN, the endpoint answers this machine's callers.
 */
const UI_ORIGIN = 'http://localhost:8233';
process.env.CODEC_ALLOWED_ORIGINS = UI_ORIGIN;
delete process.env.CODEC_OPERATOR_TOKEN;

const api = useApi();
const run = promisify(execFile);
const QUESTION = 'what-the-newcomer-asked-3';
const ANSWER = 'what-the-model-said-5';

const show = async (runId: string, ...codec: string[]) =>
  payloadsIn(JSON.parse((await run(TEMPORAL_CLI, ['workflow', 'show', '--workflow-id', runId, '--address', process.env.TEMPORAL_ADDRESS!, ...codec, '--output', 'json'], { encoding: 'utf8' })).stdout));

describe('the codec endpoint in development mode', () => {
  it("answers the dev UI's own requests (its origin, no credential) and the CLI with npm start's settings, with the plaintext", async () => {
    const t = await tenant();
    await scriptModel(t.model, [{ text: ANSWER }]);
    const ran = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: QUESTION } });
    expect(ran.status).toBe(200);
    const stored = await show(ran.body.id);
    expect(plaintextOf(stored)).not.toContain(QUESTION);

    // What the UI sends: a preflight, then the payloads with its namespace, from its origin, without a credential.
    const preflight = await fetch(`${api.url}/codec/decode`, { method: 'OPTIONS', headers: { origin: UI_ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-namespace' } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
    const decoded = await fetch(`${api.url}/codec/decode`, { method: 'POST', headers: { origin: UI_ORIGIN, 'content-type': 'application/json', 'x-namespace': 'default' }, body: JSON.stringify({ payloads: stored }) });
    expect(decoded.status).toBe(200);
    expect(decoded.headers.get('access-control-allow-origin')).toBe(UI_ORIGIN);
    const plain = plaintextOf(((await decoded.json()) as { payloads: WirePayload[] }).payloads);
    expect(plain).toContain(QUESTION);
    expect(plain).toContain(ANSWER);

    const shown = plaintextOf(await show(ran.body.id, '--codec-endpoint', `${api.url}/codec`));
    expect(shown).toContain(QUESTION);
    expect(shown).toContain(ANSWER);
  });

  it('is off outside development mode without the operator token', async () => {
    process.env.DEVELOPMENT_MODE = '0';
    resetConfig();
    try {
      const res = await call(api.url, 'POST', '/codec/decode', { body: { payloads: [] } });
      expect(res.status).toBe(501);
      expect(res.body.error.code).toBe('not_implemented');
    } finally {
      process.env.DEVELOPMENT_MODE = '1';
      resetConfig();
    }
  });
});
