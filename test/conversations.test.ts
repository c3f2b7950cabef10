import { QueryTypes } from 'sequelize';
import { db } from '../db/sequelize';
import { type Answer, call, providerRequests, tenant, type Tenant, useApi } from './support/stack';
import { DEFAULT_INSTRUCTIONS } from '../domain/agents';

const api = useApi();

const SCOPES = ['conversations:create', 'conversations:read', 'messages:create', 'messages:read'];
const withoutIds = (a: Answer) => a.text.replace(/req_[0-9a-z]+/g, 'req_X');

async function open(t: Tenant, body: Record<string, unknown>): Promise<Answer> {
  return call(api.url, 'POST', '/api/v2/conversations', { key: t.key, body });
}
const post = (t: Tenant, id: string, body: Record<string, unknown>) => call(api.url, 'POST', `/api/v2/conversations/${id}/messages`, { key: t.key, body });

describe('conversations', () => {
  it('opens a conversation, resolves its external_ref to the same one, and reads it', async () => {
    const t = await tenant({ scopes: SCOPES });
    const created = await open(t, { agent: t.agent, channel: 'whatsapp', external_ref: 'wa:+15550001' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ id: expect.stringMatching(/^conv_/), object: 'conversation', agent: t.agent, channel: 'whatsapp', external_ref: 'wa:+15550001', created_at: expect.any(String) });
    const again = await open(t, { agent: t.agent, external_ref: 'wa:+15550001' });
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(created.body.id);
    const read = await call(api.url, 'GET', `/api/v2/conversations/${created.body.id}`, { key: t.key });
    expect(read.body).toEqual(created.body);
  });

  it('runs the conversation’s agent on a posted message, with the earlier turns as history', async () => {
    const t = await tenant({ scopes: SCOPES, config: { instructions: 'Be brief.' } });
    const conv = (await open(t, { agent: t.agent })).body.id;
    const first = await post(t, conv, { input: 'My name is Ada.' });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ conversation: conv, status: 'completed', agent: t.agent });
    await post(t, conv, { input: 'What is my name?' });
    const [, second] = await providerRequests(t.model);
    expect(second.body.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'My name is Ada.' },
      { role: 'assistant', content: 'stub reply' },
      { role: 'user', content: 'What is my name?' },
    ]);
  });

  it('runs without history when memory_policy is none', async () => {
    const t = await tenant({ scopes: SCOPES });
    const conv = (await open(t, { agent: t.agent })).body.id;
    await post(t, conv, { input: 'first' });
    await post(t, conv, { input: 'second', options: { memory_policy: 'none' } });
    const [, second] = await providerRequests(t.model);
    expect(second.body.messages).toEqual([{ role: 'system', content: DEFAULT_INSTRUCTIONS }, { role: 'user', content: 'second' }]);
  });

  it('refuses a different agent in the body, and a conversation without an assistant with 409', async () => {
    const t = await tenant({ scopes: SCOPES });
    const conv = (await open(t, { agent: t.agent })).body.id;
    const other = await post(t, conv, { input: 'hi', agent: 'agt_01eeeeeeeeeeeeeeeeeeeeeeee' });
    expect(other.status).toBe(400);
    const bare = (await open(t, {})).body.id;
    const orphan = await post(t, bare, { input: 'hi' });
    expect(orphan.status).toBe(409);
    expect(orphan.body.error.code).toBe('agent_not_available');
    expect(await providerRequests(t.model)).toHaveLength(0);
  });

  it('pages messages by after with next_cursor, and refuses limit above 100', async () => {
    const t = await tenant({ scopes: SCOPES });
    const conv = (await open(t, { agent: t.agent })).body.id;
    await post(t, conv, { input: 'one' });
    await post(t, conv, { input: 'two' });
    const seen: { role: string; content: unknown }[] = [];
    let after: string | null = null;
    do {
      const query: string = after ? `?limit=3&after=${after}` : '?limit=3';
      const page = await call(api.url, 'GET', `/api/v2/conversations/${conv}/messages${query}`, { key: t.key });
      expect(page.status).toBe(200);
      seen.push(...page.body.data.map((m: { role: string; content: unknown }) => ({ role: m.role, content: m.content })));
      after = page.body.next_cursor;
    } while (after);
    const reply = { role: 'assistant', content: [{ type: 'text', text: 'stub reply' }] };
    expect(seen).toEqual([{ role: 'user', content: 'one' }, reply, { role: 'user', content: 'two' }, reply]);
    const tooMany = await call(api.url, 'GET', `/api/v2/conversations/${conv}/messages?limit=101`, { key: t.key });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error.code).toBe('invalid_request');
  });

  it("answers another workspace's conversation exactly as a missing one, on every conversation endpoint", async () => {
    const mine = await tenant({ scopes: SCOPES });
    const theirs = await tenant({ scopes: SCOPES });
    const foreign = (await open(theirs, { agent: theirs.agent })).body.id;
    const missing = 'conv_01ffffffffffffffffffffffff';
    for (const [method, suffix, body] of [['GET', '', undefined], ['GET', '/messages', undefined], ['POST', '/messages', { input: 'hi' }]] as const) {
      const a = await call(api.url, method, `/api/v2/conversations/${foreign}${suffix}`, { key: mine.key, body });
      const b = await call(api.url, method, `/api/v2/conversations/${missing}${suffix}`, { key: mine.key, body });
      expect(a.status).toBe(404);
      expect(a.body.error.code).toBe('conversation_not_found');
      expect(withoutIds(a).replace(foreign, 'X')).toBe(withoutIds(b).replace(missing, 'X'));
    }
  });

  it('never exposes the internal conversation of a stateless response, and writes no messages to it', async () => {
    const t = await tenant({ scopes: [...SCOPES, 'responses:create'] });
    const res = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'private' } });
    const [row] = await db().query<{ public_id: string; messages: number; output: unknown }>(
      `SELECT c.public_id, (SELECT count(*)::int FROM messages m WHERE m.conversation_id = c.id) AS messages, r.output
         FROM runs r JOIN conversations c ON c.id = r.conversation_id WHERE r.public_id = :id`,
      { replacements: { id: res.body.id }, type: QueryTypes.SELECT },
    );
    expect(row.messages).toBe(0);
    expect(row.output).toBeNull();
    const read = await call(api.url, 'GET', `/api/v2/conversations/${row.public_id}`, { key: t.key });
    expect(read.status).toBe(404);
  });
});
