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

async function respond(format: unknown, replies: { text: string }[]) {
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
    expect(sent[0].body.response_format).toEqual({ type: 'json_object' });
    expect(sent[0].body.messages[0].content).toContain('"required":["name","age"]');
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
