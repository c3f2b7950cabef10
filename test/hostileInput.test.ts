import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import * as admin from '../admin/commands';
import { SCHEMA_BOUNDS } from '../domain/structuredOutput';
import { call, inOneRateWindow, scriptModel, tenant, useApi, type Answer } from './support/stack';
import { allFrames, openStream } from './support/sse';

// This file's API refuses a client address after five failed authentications a minute.
process.env.AUTH_FAILURE_LIMIT = '5';

const api = useApi();
const respond = (body: unknown, key?: string, headers: Record<string, string> = {}) => call(api.url, 'POST', '/api/v2/responses', { key, body, headers });
const withSchema = (schema: unknown) => ({ agent: 'agt_any', input: 'hi', response_format: { type: 'json_schema', schema, strict: true } });

function nested(depth: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < depth; i++) schema = { type: 'object', properties: { a: schema } };
  return schema;
}

const refused = (a: Answer, bound: string) => {
  expect({ status: a.status, code: a.body?.error?.code }).toEqual({ status: 400, code: 'invalid_request' });
  expect(a.body.error.message).toContain(bound);
};

describe('a caller’s JSON Schema is bounded before it is compiled, without a credential', () => {
  it('refuses a schema nested too deep, one too large, one with too many keywords and one with too many properties, naming the bound', async () => {
    refused(await respond(withSchema(nested(500))), `deeper than ${SCHEMA_BOUNDS.depth}`);
    // Arrays nested 100,000 deep: refused by the walk, never handed to anything that recurses.
    const deepArrays = `{"agent":"agt_any","input":"hi","response_format":{"type":"json_schema","strict":true,"schema":{"type":"object","enum":${'['.repeat(100_000)}${']'.repeat(100_000)}}}}`;
    refused(await call(api.url, 'POST', '/api/v2/responses', { raw: deepArrays }), `deeper than ${SCHEMA_BOUNDS.depth}`);
    refused(await respond(withSchema({ type: 'object', description: 'x'.repeat(SCHEMA_BOUNDS.bytes) })), `larger than ${SCHEMA_BOUNDS.bytes} bytes`);
    const manyKeywords = { type: 'object', properties: Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`p${i}`, { type: 'string', minLength: 1, maxLength: 9, pattern: '^p', title: 't', description: 'd', default: 'p' }])) };
    refused(await respond(withSchema(manyKeywords)), `more than ${SCHEMA_BOUNDS.keywords} keywords`);
    const manyProperties = { type: 'object', properties: Object.fromEntries(Array.from({ length: SCHEMA_BOUNDS.properties + 1 }, (_, i) => [`p${i}`, {}])) };
    refused(await respond(withSchema(manyProperties)), `more than ${SCHEMA_BOUNDS.properties} properties`);
    // A schema within the bounds passes validation and reaches authentication.
    expect((await respond(withSchema(nested(10)))).status).toBe(401);
  });

  it('keeps nothing of the schemas it compiles: past a warm-up, 1,000 more distinct schemas leave the heap flat', async () => {
    // In a process of its own, with the compiled module npm test builds, so the garbage collector can be
    // asked. The warm-up fills what V8 itself keeps for a while (compiled code); a cache of schemas
    // would instead grow with every new one (it held 36 MB for 2,000 small schemas).
    const module = path.join(__dirname, '../dist/domain/structuredOutput.js');
    const script = `
      const { schemaProblem } = require(${JSON.stringify(module)});
      const schema = (i) => ({ type: 'object', $id: 'https://example.test/s' + i, properties: Object.fromEntries(Array.from({ length: 10 }, (_, j) => ['f' + i + '_' + j, { type: 'string', pattern: '^x' + j }])) });
      const settle = async () => { for (let k = 0; k < 10; k++) { global.gc(); await new Promise((r) => setTimeout(r, 10)); } return process.memoryUsage().heapUsed; };
      (async () => {
        for (let i = 0; i < 500; i++) if (schemaProblem(schema(-i - 1))) throw new Error('refused');
        const before = await settle();
        for (let i = 0; i < 1000; i++) if (schemaProblem(schema(i))) throw new Error('refused');
        process.stdout.write(String((await settle()) - before));
      })();`;
    // Not execFileSync: blocking this process's event loop for seconds stalls the in-process API, whose
    // idle keep-alive sockets then close just as the next test's request is sent on one (ECONNRESET).
    const grown = Number((await promisify(execFile)(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8' })).stdout);
    expect(grown).toBeLessThan(3 * 1024 * 1024);
  });
});

describe('caller schemas never see one another', () => {
  it('lets two tenants use the same $id, and a $ref to another caller’s $id resolves to nothing', async () => {
    const a = await tenant();
    const b = await tenant();
    await scriptModel(a.model, [{ text: '{"alpha":"x"}' }]);
    await scriptModel(b.model, [{ text: '{"beta":1}' }]);
    const shared = 'https://example.test/shared-schema';
    const mine = await respond({ agent: a.agent, input: 'hi', response_format: { type: 'json_schema', schema: { $id: shared, type: 'object', properties: { alpha: { type: 'string' } }, required: ['alpha'] }, strict: true } }, a.key);
    const theirs = await respond({ agent: b.agent, input: 'hi', response_format: { type: 'json_schema', schema: { $id: shared, type: 'object', properties: { beta: { type: 'number' } }, required: ['beta'] }, strict: true } }, b.key);
    expect(mine.body.output).toEqual([{ type: 'json', json: { alpha: 'x' } }]);
    expect(theirs.body.output).toEqual([{ type: 'json', json: { beta: 1 } }]);

    const peek = await respond(withSchema({ type: 'object', properties: { other: { $ref: shared } } }));
    expect(peek.status).toBe(400);
    expect(peek.body.error.message).toContain('cannot be enforced');
    expect(peek.body.error.message).not.toMatch(/alpha|beta/);
  });
});

describe('caller patterns', () => {
  it('validate ^(a+)+$ in linear time: the run ends 422, and another tenant’s streamed run goes on meanwhile', async () => {
    const hostile = await tenant();
    const bystander = await tenant();
    const evil = `{"word":"${'a'.repeat(40)}!"}`;
    await scriptModel(hostile.model, [{ text: evil }, { text: evil }]);
    await scriptModel(bystander.model, [{ chunks: ['still ', 'here'], chunkDelayMs: 300 }]);
    const schema = { type: 'object', properties: { word: { type: 'string', pattern: '^(a+)+$' } }, required: ['word'] };
    const [attack, stream] = await Promise.all([
      respond({ agent: hostile.agent, input: 'hi', response_format: { type: 'json_schema', schema, strict: true } }, hostile.key),
      openStream(api.url, '/api/v2/responses', bystander.key, { agent: bystander.agent, input: 'hi', stream: true }).then(allFrames),
    ]);
    expect(attack.status).toBe(422);
    expect(attack.body.error).toMatchObject({ code: 'structured_output_failed', message: expect.stringContaining('$.word') });
    expect(stream.filter((f) => f.event).at(-1)).toMatchObject({ event: 'response.completed', data: { output: [{ type: 'text', text: 'still here' }] } });
  });

  it('enforces each of a schema’s patterns, not only the first', async () => {
    const t = await tenant();
    await scriptModel(t.model, [{ text: '{"a":"x1","b":"x2"}' }, { text: '{"a":"x1","b":"x2"}' }]);
    const schema = { type: 'object', properties: { a: { type: 'string', pattern: '^x' }, b: { type: 'string', pattern: '^y' } }, required: ['a', 'b'] };
    const res = await respond({ agent: t.agent, input: 'hi', response_format: { type: 'json_schema', schema, strict: true } }, t.key);
    expect(res.status).toBe(422);
    expect(res.body.error.message).toBe('The reply did not match the schema at: $.b');
  });

  it('refuses a pattern that needs backtracking (a backreference) as unenforceable', async () => {
    refused(await respond(withSchema({ type: 'object', properties: { w: { type: 'string', pattern: '(a)\\1' } } })), 'cannot be enforced');
  });
});

describe('checks that come with validation', () => {
  it('refuses reserved request_context keys in any case', async () => {
    for (const key of ['TENANT_ID', 'Tenant_Id', 'Scopes']) {
      refused(await respond({ agent: 'agt_any', input: 'hi', request_context: { [key]: 'x' } }), key);
    }
  });

  it('checks the Idempotency-Key length before authentication, and refuses an empty external_ref', async () => {
    refused(await respond({ agent: 'agt_any', input: 'hi' }, undefined, { 'Idempotency-Key': 'k'.repeat(256) }), 'Idempotency-Key');
    refused(await respond({ agent: 'agt_any', input: 'hi', external_ref: '' }), 'external_ref');
  });

  it('accepts a tool URL with an IPv6 literal at agent creation', async () => {
    const ws = await admin.createWorkspace({ name: 'v6' });
    const agent = await admin.createAgent({ workspace: ws.id, name: 'v6', config: { tools: [{ type: 'http', name: 'lookup', url: 'https://[2001:db8::1]/x' }] } });
    expect(agent.id).toMatch(/^agt_/);
  });
});

describe('credential probing', () => {
  const from = (address: string) => ({ 'X-Forwarded-For': address });

  it('refuses a malformed key at once, and guesses from a client address that keeps failing, while live keys carry on', async () => {
    const t = await tenant({ scopes: ['logs:read'] });
    const logs = (key: string, address: string) => call(api.url, 'GET', '/api/v2/logs', { key, headers: from(address) });
    expect((await logs('tgcc_short', '203.0.113.1')).status).toBe(401);
    const guessed = () => `tgcc_${Buffer.from(Math.random().toString()).toString('base64url').padEnd(43, 'A').slice(0, 43)}`;
    const { answers, blocked, valid } = await inOneRateWindow(async () => {
      const answers: number[] = [];
      for (let i = 0; i < 7; i++) answers.push((await logs(guessed(), '203.0.113.2')).status);
      return { answers, blocked: await logs(guessed(), '203.0.113.2'), valid: await logs(t.key, '203.0.113.2') };
    });
    expect(answers.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
    expect(blocked.status).toBe(429);
    expect(blocked.body.error.code).toBe('rate_limited');
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    // A key that resolves is served from that address all the same, and from any other.
    expect(valid.status).toBe(200);
    expect((await logs(t.key, '203.0.113.3')).status).toBe(200);
  });
});
