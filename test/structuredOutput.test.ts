import type { StubReply } from './stack/stubProvider';
import { call, providerRequests, scriptModel, tenant, useApi } from './support/stack';

const api = useApi();

const PERSON = {
  type: 'json_schema',
  name: 'person',
  schema: {
    type: 'object',
    properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 0 } },
    required: ['name', 'age'],
    additionalProperties: false,
  },
};

async function respond(format: unknown, replies: StubReply[]) {
  const t = await tenant();
  await scriptModel(t.model, replies);
  const res = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'Who?', response_format: format } });
  return { res, sent: await providerRequests(t.model) };
}

describe('structured output', () => {
  it('parses, prunes to the schema keys and returns a json item in one call', async () => {
    const { res, sent } = await respond(PERSON, [{ text: '```json\n{"name": "Ada", "age": 36, "mood": "curious"}\n```' }]);
    expect(res.status).toBe(200);
    expect(res.body.output).toEqual([{ type: 'json', json: { name: 'Ada', age: 36 } }]);
    expect(sent).toHaveLength(1);
    // The schema reaches the provider, strict (it fits the strict subset), and stays in the prompt for providers that only take json_object.
    expect(sent[0].body.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'person', schema: PERSON.schema, strict: true } });
    expect(sent[0].body.messages[0].content).toContain('"required":["name","age"]');
  });

  it('asks a reply cut off at the output cap again for a complete object, without resending what was cut off', async () => {
    const cut = '{"name": "Ada", "notes": "' + 'and so on, '.repeat(200);
    const { res, sent } = await respond({ type: 'json_object' }, [{ text: cut, truncated: true }, { text: '{"name": "Ada"}' }]);
    expect(res.status).toBe(200);
    expect(res.body.output).toEqual([{ type: 'json', json: { name: 'Ada' } }]);
    expect(sent).toHaveLength(2);
    const repair = sent[1].body.messages as { role: string; content: string }[];
    expect(JSON.stringify(repair)).not.toContain('and so on');
    expect(repair.at(-1)).toEqual({ role: 'user', content: expect.stringContaining('cut off') });
  });

  it('sends a schema outside the strict subset with strict: false', async () => {
    const open = { ...PERSON, schema: { type: 'object', properties: { name: { type: 'string', minLength: 1 } }, required: ['name'] } };
    const { res, sent } = await respond(open, [{ text: '{"name": "Ada"}' }]);
    expect(res.status).toBe(200);
    expect(sent[0].body.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'person', schema: open.schema, strict: false } });
  });

  it('falls back to json_object for a model that refuses json_schema, and asks it that way from then on', async () => {
    const t = await tenant();
    await scriptModel(t.model, [{ text: '{"name": "Ada", "age": 36}', refusesJsonSchema: true }, { text: '{"name": "Bo", "age": 7}', refusesJsonSchema: true }]);
    const ask = () => call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'Who?', response_format: PERSON } });
    const first = await ask();
    expect(first.status).toBe(200);
    expect(first.body.output).toEqual([{ type: 'json', json: { name: 'Ada', age: 36 } }]);
    const second = await ask();
    expect(second.body.output).toEqual([{ type: 'json', json: { name: 'Bo', age: 7 } }]);
    // One refused request in all: the first run's; the second run asked json_object at once.
    const formats = (await providerRequests(t.model)).map((r) => r.body.response_format.type);
    expect(formats).toEqual(['json_schema', 'json_object', 'json_object']);
    expect(first.body.usage.total_tokens + second.body.usage.total_tokens).toBe(30);
  });

  it('a refusal is an answer: a refusal item, never repaired and never a 422, structured, plain and streamed', async () => {
    const t = await tenant({ scopes: ['responses:create', 'logs:read'] });
    await scriptModel(t.model, [{ refusal: "I can't help with that." }, { refusal: "I can't help with that.", chunks: ["I can't ", 'help with that.'] }, { refusal: 'No.' }]);
    const plain = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'Who?', response_format: PERSON } });
    expect(plain.status).toBe(200);
    expect(plain.body).toMatchObject({ status: 'completed', output: [{ type: 'refusal', refusal: "I can't help with that." }] });
    const streamed = await fetch(`${api.url}/api/v2/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ agent: t.agent, input: 'Who?', stream: true }),
    });
    const frames = (await streamed.text()).split('\n\n').filter((f) => f.includes('data:'));
    const completed = frames.find((f) => f.includes('event: response.completed'))!;
    expect(JSON.parse(completed.slice(completed.indexOf('data:') + 5)).output).toEqual([{ type: 'refusal', refusal: "I can't help with that." }]);
    // The refusal is never streamed as answer text.
    expect(frames.some((f) => f.includes('output_text.delta') && f.includes('help with'))).toBe(false);
    const unstructured = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'Who?' } });
    expect(unstructured.body).toMatchObject({ status: 'completed', output: [{ type: 'refusal', refusal: 'No.' }] });
    expect(await providerRequests(t.model)).toHaveLength(3);
    const logs = (await call(api.url, 'GET', '/api/v2/logs', { key: t.key })).body.data;
    expect(logs.map((l: { refused: boolean }) => l.refused)).toEqual([true, true, true]);
  });

  it('repairs once: a second call states the problems, and the run succeeds with exactly two calls', async () => {
    const { res, sent } = await respond(PERSON, [{ text: '{"name": "Ada"}' }, { text: '{"name": "Ada", "age": 36}' }]);
    expect(res.status).toBe(200);
    expect(res.body.output).toEqual([{ type: 'json', json: { name: 'Ada', age: 36 } }]);
    expect(sent).toHaveLength(2);
    const repair = sent[1].body.messages;
    expect(repair[repair.length - 2]).toEqual({ role: 'assistant', content: '{"name": "Ada"}' });
    expect(repair[repair.length - 1].content).toContain("$.age: must have required property 'age'");
    expect(res.body.usage.total_tokens).toBe(30);
  });

  it('fails with 422 after the one repair, naming the paths and never the values', async () => {
    const bad = { text: '{"name": "SECRET-NAME-991", "age": "forty-SECRET-AGE"}' };
    const { res, sent } = await respond(PERSON, [bad, bad, { text: '{"name": "x", "age": 1}' }]);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('structured_output_failed');
    expect(res.body.error.message).toContain('$.age');
    expect(res.text).not.toContain('SECRET');
    expect(res.body).toMatchObject({ id: expect.stringMatching(/^run_/), status: 'failed', trace_id: expect.any(String) });
    expect(sent).toHaveLength(2);
  });

  it('json_object requires an object', async () => {
    const { res, sent } = await respond('json_object', [{ text: '[1, 2]' }, { text: 'not json at all' }]);
    expect(res.status).toBe(422);
    expect(res.body.error.message).toContain('$');
    expect(sent).toHaveLength(2);
    const ok = await respond({ type: 'json_object' }, [{ text: '{"any": ["shape", 1]}' }]);
    expect(ok.res.body.output).toEqual([{ type: 'json', json: { any: ['shape', 1] } }]);
  });

  it('text is free text and asks the provider for no JSON mode', async () => {
    const { res, sent } = await respond('text', [{ text: '{not json' }]);
    expect(res.body.output).toEqual([{ type: 'text', text: '{not json' }]);
    expect(sent[0].body.response_format).toBeUndefined();
  });
});
