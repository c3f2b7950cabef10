import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { QueryTypes } from 'sequelize';
import { redis } from '../infra/redis';
import { db } from '../db/sequelize';
import { hashApiKey } from '../domain/apiKeys';
import { runEventsKey } from '../domain/streamEvents';
import { TEMPORAL_CLI } from '../workers/temporalDevServer';
import { call, scriptModel, tenant, useApi } from './support/stack';
import { payloadsIn, plaintextOf, storedPayloads } from './support/payloads';

// This file's API serves the codec endpoint.
process.env.CODEC_OPERATOR_TOKEN = 'operator-token-for-tests';

const api = useApi();
const QUESTION = 'the-secret-question-7';
const ANSWER = 'the-secret-answer-9';


describe('a stateless run keeps no plaintext copy of its exchange', () => {
  it('seals every Temporal payload (the codec endpoint shows them to an operator), its idempotency record, and lets its stream go soon', async () => {
    const t = await tenant();
    await scriptModel(t.model, [{ text: ANSWER }]);
    const headers = { 'Idempotency-Key': 'private' };
    const res = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: QUESTION }, headers });
    expect(res.status).toBe(200);
    expect(res.body.output).toEqual([{ type: 'text', text: ANSWER }]);

    const stored = storedPayloads(res.body.id);
    expect(stored.length).toBeGreaterThan(3);
    const raw = JSON.stringify(stored) + plaintextOf(stored);
    expect(raw).not.toContain(QUESTION);
    expect(raw).not.toContain(ANSWER);

    // The operator decodes them through the codec endpoint; without the operator token, nothing.
    const decode = (authorization?: string) => call(api.url, 'POST', '/codec/decode', { body: { payloads: stored }, headers: authorization ? { authorization } : {} });
    expect((await decode()).status).toBe(401);
    expect((await decode('Bearer wrong-token-of-same-size!!')).status).toBe(401);
    const decoded = await decode(`Bearer ${process.env.CODEC_OPERATOR_TOKEN}`);
    expect(decoded.status).toBe(200);
    const plain = plaintextOf(decoded.body.payloads);
    expect(plain).toContain(QUESTION);
    expect(plain).toContain(ANSWER);

    // Temporal's own CLI decodes through the endpoint too (the UI speaks the same protocol). Run
    // asynchronously: the endpoint it calls is served by this very process.
    const { stdout: shown } = await promisify(execFile)(
      TEMPORAL_CLI,
      ['workflow', 'show', '--workflow-id', res.body.id, '--address', process.env.TEMPORAL_ADDRESS!, '--codec-endpoint', `${api.url}/codec`, '--codec-auth', `Bearer ${process.env.CODEC_OPERATOR_TOKEN}`, '--output', 'json'],
      { encoding: 'utf8' },
    );
    const shownPlain = plaintextOf(payloadsIn(JSON.parse(shown)));
    expect(shownPlain).toContain(QUESTION);
    expect(shownPlain).toContain(ANSWER);

    const [record] = await db().query<{ body: Buffer }>(
      'SELECT i.response_body AS body FROM idempotency_keys i JOIN api_keys k ON k.id = i.api_key_id WHERE k.key_hash = :hash',
      { replacements: { hash: hashApiKey(t.key) }, type: QueryTypes.SELECT },
    );
    expect(record.body.toString('latin1')).not.toContain(ANSWER);
    const replay = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: QUESTION }, headers });
    expect(replay.headers.get('idempotency-replayed')).toBe('true');
    expect(replay.text).toBe(res.text);

    const ttl = await redis().ttl(runEventsKey(res.body.id));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(300);
  });

  it('writes no handoff reason to the outbox for a stateless run', async () => {
    const t = await tenant({ config: { tools: [{ type: 'handoff' }] }, listened: true });
    await scriptModel(t.model, [{ toolCalls: [{ name: 'handoff', arguments: `{"reason":"${ANSWER}"}` }] }]);
    const res = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'help' } });
    expect(res.status).toBe(200);
    const [event] = await db().query<{ envelope: { data: { object: Record<string, unknown> } } }>(
      `SELECT e.envelope FROM outbox_events e JOIN workspaces w ON w.id = e.workspace_id WHERE w.public_id = :ws AND e.type = 'handoff.requested'`,
      { replacements: { ws: t.workspace }, type: QueryTypes.SELECT },
    );
    expect(event.envelope.data.object).toMatchObject({ run: res.body.id });
    expect(JSON.stringify(event.envelope)).not.toContain(ANSWER);
  });
});
