import { QueryTypes } from 'sequelize';
import { db } from '../db/sequelize';
import { type Answer, call, providerRequests, scriptModel, tenant, useApi } from './support/stack';

const api = useApi();

/*
 * Validation runs before authentication, so most cases need no credential: a refused body answers
 * 400, and a body that passes validation reaches authentication and answers 401. The expected names
 * are written out from the spec, never read from the code's lists, so a wrong list fails here.
 */
const FORBIDDEN_OPTIONS = [
  'billing_account', 'idempotency_key', 'instructions', 'knowledge_groups', 'max_tokens', 'memory_namespace', 'model', 'prompt',
  'provider', 'request_id', 'system_prompt', 'temperature', 'tools', 'top_p', 'trace_id', 'usage_category',
];
const RESERVED_CONTEXT_KEYS = [
  'api_key', 'application', 'application_id', 'billed_to', 'billing', 'company', 'company_id', 'credential', 'credential_id',
  'entitlements', 'environment', 'environment_id', 'partner', 'partner_id', 'permissions', 'plan', 'principal', 'principal_id',
  'principal_type', 'role', 'roles', 'scope', 'scopes', 'subject', 'subject_id', 'tenant', 'tenant_id', 'token', 'usage_category',
];

/** Never looked up: a body is judged before the agent is resolved. */
const AGENT = 'agt_01aaaaaaaaaaaaaaaaaaaaaaaa';
const BASE = { agent: AGENT, input: 'hi' };
const OBJECT_SCHEMA = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'], additionalProperties: false };

const post = (body: unknown, key?: string): Promise<Answer> => call(api.url, 'POST', '/api/v2/responses', { key, body });

async function expectRefused(body: unknown, naming: string): Promise<void> {
  const res = await post(body);
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status: 400, code: 'invalid_request' });
  expect(res.body.error.message).toContain(naming);
}

/** Past validation without a credential means the next step, authentication, answered. */
async function expectValid(body: unknown): Promise<void> {
  const res = await post(body);
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status: 401, code: 'authentication_error' });
}

describe('the control case', () => {
  it('accepts the base body used by every case below (it fails only for the reason each case adds)', async () => {
    await expectValid(BASE);
  });
});

describe('caller-forbidden options', () => {
  it.each(FORBIDDEN_OPTIONS)('refuses %s flat in the body, naming it', async (name) => {
    await expectRefused({ ...BASE, [name]: 'x' }, name);
  });

  it.each(FORBIDDEN_OPTIONS)('refuses %s nested under options, naming it', async (name) => {
    await expectRefused({ ...BASE, options: { [name]: 'x' } }, `options.${name}`);
  });

  it('refuses a forbidden option whatever its value', async () => {
    for (const value of [null, 0, false, {}, []]) await expectRefused({ ...BASE, temperature: value }, 'temperature');
  });

  it('does not mistake Object.prototype member names for forbidden options', async () => {
    await expectValid(JSON.parse(`{"agent":"${AGENT}","input":"hi","constructor":1,"toString":1,"__proto__":{"model":"x"}}`));
  });
});

describe('the options object', () => {
  it.each([
    ['an unknown key', { foo: 1 }, 'foo'],
    ['a misspelt option', { timeout: 5000 }, 'timeout'],
    ['a top-level body field', { input: 'x' }, 'input'],
  ])('refuses %s inside options', async (_label, options, naming) => {
    await expectRefused({ ...BASE, options }, naming);
  });

  it.each([['an array', []], ['a string', 'x'], ['null', null]])('refuses options as %s', async (_label, options) => {
    await expectRefused({ ...BASE, options }, 'options');
  });

  it('reads the nested value over the flat one: flat invalid + nested valid passes, flat valid + nested invalid fails', async () => {
    await expectValid({ ...BASE, timeout_ms: 500, options: { timeout_ms: 5000 } });
    await expectRefused({ ...BASE, timeout_ms: 5000, options: { timeout_ms: 500 } }, 'timeout_ms');
    await expectValid({ ...BASE, knowledge_policy: 'sometimes', options: { knowledge_policy: 'none' } });
    await expectRefused({ ...BASE, knowledge_policy: 'none', options: { knowledge_policy: 'sometimes' } }, 'knowledge_policy');
    await expectValid({ ...BASE, response_format: 'xml', options: { response_format: 'text' } });
    await expectRefused({ ...BASE, response_format: 'text', options: { response_format: { type: 'json_schema', schema: OBJECT_SCHEMA, strict: false } } }, 'strict');
  });
});

describe('option values', () => {
  it.each([
    ['timeout_ms 999', { timeout_ms: 999 }, 'timeout_ms'],
    ['timeout_ms 120001', { timeout_ms: 120001 }, 'timeout_ms'],
    ['timeout_ms 0', { timeout_ms: 0 }, 'timeout_ms'],
    ['timeout_ms not an integer', { timeout_ms: 1500.5 }, 'timeout_ms'],
    ['timeout_ms as a string', { timeout_ms: '5000' }, 'timeout_ms'],
    ['timeout_ms null', { timeout_ms: null }, 'timeout_ms'],
    ['preview as a string', { preview: 'true' }, 'preview'],
    ['stream as a number', { stream: 1 }, 'stream'],
    ['knowledge_policy unknown', { knowledge_policy: 'always' }, 'knowledge_policy'],
    ['memory_policy required (not offered)', { memory_policy: 'required' }, 'memory_policy'],
    ['tool_policy unknown', { tool_policy: 'some' }, 'tool_policy'],
    ['tool_policy as a number', { tool_policy: 1 }, 'tool_policy'],
  ])('refuses %s, flat and nested, not clamped or coerced', async (_label, option, naming) => {
    await expectRefused({ ...BASE, ...option }, naming);
    await expectRefused({ ...BASE, options: option }, naming);
  });

  it.each<[string, Record<string, unknown>[]]>([
    ['timeout_ms 1000', [{ timeout_ms: 1000 }]],
    ['timeout_ms 120000', [{ timeout_ms: 120000 }]],
    ['every knowledge_policy', [{ knowledge_policy: 'auto' }, { knowledge_policy: 'none' }, { knowledge_policy: 'required' }]],
    ['every memory_policy', [{ memory_policy: 'auto' }, { memory_policy: 'none' }]],
    ['every tool_policy', [{ tool_policy: 'auto' }, { tool_policy: 'none' }, { tool_policy: 'required' }]],
    ['booleans', [{ preview: false, stream: false }]],
  ])('accepts %s, flat and nested', async (_label, options) => {
    for (const option of options) {
      await expectValid({ ...BASE, ...option });
      await expectValid({ ...BASE, options: option });
    }
  });
});

describe('response_format', () => {
  it.each([
    ['an unknown string', 'xml', 'response_format'],
    ['the json_schema string (no schema)', 'json_schema', 'schema'],
    ['a number', 5, 'response_format'],
    ['an array', ['text'], 'response_format'],
    ['null', null, 'response_format'],
    ['an object without type', { name: 'x' }, 'type'],
    ['an object with an unknown type', { type: 'yaml' }, 'type'],
    ['an unknown key', { type: 'json_object', format: 'x' }, 'format'],
    ['a name longer than 64', { type: 'json_schema', name: 'n'.repeat(65), schema: OBJECT_SCHEMA }, 'name'],
    ['a name that is not a string', { type: 'json_schema', name: 7, schema: OBJECT_SCHEMA }, 'name'],
    ['json_schema without schema', { type: 'json_schema' }, 'schema'],
    ['a schema that is not an object', { type: 'json_schema', schema: [OBJECT_SCHEMA] }, 'schema'],
    ['strict false', { type: 'json_schema', schema: OBJECT_SCHEMA, strict: false }, 'strict'],
    ['strict as a string', { type: 'json_schema', schema: OBJECT_SCHEMA, strict: 'true' }, 'strict'],
    ['a schema with an unknown keyword', { type: 'json_schema', schema: { ...OBJECT_SCHEMA, frobnicate: true } }, 'response_format.schema'],
    ['a schema whose root is not an object', { type: 'json_schema', schema: { type: 'array', items: { type: 'string' } } }, 'response_format.schema'],
    ['a schema without a root type', { type: 'json_schema', schema: { properties: { a: { type: 'string' } } } }, 'response_format.schema'],
    ['a schema with a bad $ref', { type: 'json_schema', schema: { type: 'object', properties: { a: { $ref: '#/$defs/missing' } } } }, 'response_format.schema'],
    ['a schema with an invalid type name', { type: 'json_schema', schema: { type: 'object', properties: { a: { type: 'strin' } } } }, 'response_format.schema'],
  ])('refuses %s, flat and nested', async (_label, format, naming) => {
    await expectRefused({ ...BASE, response_format: format }, naming);
    await expectRefused({ ...BASE, options: { response_format: format } }, naming);
  });

  it.each([
    ['the text string', 'text'],
    ['the json_object string', 'json_object'],
    ['a text object', { type: 'text' }],
    ['a json_object object', { type: 'json_object' }],
    ['json_schema with a 64-character name and strict true', { type: 'json_schema', name: 'n'.repeat(64), schema: OBJECT_SCHEMA, strict: true }],
    ['json_schema with a local $ref', { type: 'json_schema', schema: { type: 'object', $defs: { s: { type: 'string' } }, properties: { a: { $ref: '#/$defs/s' } } } }],
  ])('accepts %s', async (_label, format) => {
    await expectValid({ ...BASE, response_format: format });
    await expectValid({ ...BASE, options: { response_format: format } });
  });
});

describe('request_context', () => {
  it.each(RESERVED_CONTEXT_KEYS)('refuses the reserved key %s by name', async (key) => {
    await expectRefused({ ...BASE, request_context: { [key]: 'x' } }, `"${key}"`);
  });

  it('accepts keys that are not reserved, and resource_id as a string', async () => {
    await expectValid({ ...BASE, request_context: { customer_note: 'x', tenant_name: 'y', resource_id: 'doc_1' } });
  });

  it.each([
    ['an array', [], 'request_context'],
    ['a string', 'tenant', 'request_context'],
    ['resource_id as a number', { resource_id: 5 }, 'resource_id'],
  ])('refuses request_context as %s', async (_label, requestContext, naming) => {
    await expectRefused({ ...BASE, request_context: requestContext }, naming);
  });
});

describe('attachments', () => {
  const at = (fields: Record<string, unknown>) => ({ ...BASE, attachments: [fields] });

  it.each([
    ['without ref', { name: 'a.pdf' }, 'ref'],
    ['with an empty ref', { ref: '' }, 'ref'],
    ['with ref longer than 512', { ref: 'r'.repeat(513) }, 'ref'],
    ['with ref as a number', { ref: 5 }, 'ref'],
    ['with mime_type longer than 128', { ref: 'doc_1', mime_type: 'm'.repeat(129) }, 'mime_type'],
    ['with name longer than 255', { ref: 'doc_1', name: 'n'.repeat(256) }, 'name'],
    ['with an unknown type', { ref: 'doc_1', type: 'spreadsheet' }, 'type'],
    ['with bytes instead of a reference', { ref: 'doc_1', data: 'aGVsbG8=' }, 'data'],
  ])('refuses an attachment %s', async (_label, fields, naming) => {
    await expectRefused(at(fields), naming);
  });

  it.each([['an object', { ref: 'doc_1' }], ['an array of strings', ['doc_1']], ['null', null]])('refuses attachments as %s', async (_label, attachments) => {
    await expectRefused({ ...BASE, attachments }, 'attachments');
  });

  it('accepts each type and every length at its maximum', async () => {
    for (const type of ['file', 'image', 'audio', 'video', 'document']) {
      await expectValid(at({ ref: 'r'.repeat(512), mime_type: 'm'.repeat(128), name: 'n'.repeat(255), type }));
    }
  });
});

describe('channel, external_ref, input and other fields', () => {
  it.each(['', 'api', 'web', 'website', 'whatsapp', 'phone', 'voice'])('accepts channel %j', async (channel) => {
    await expectValid({ ...BASE, channel });
  });

  it.each([['API'], ['sms'], [' '], [null], [5]])('refuses channel %j', async (channel) => {
    await expectRefused({ ...BASE, channel }, 'channel');
  });

  it.each([
    ['longer than 200', 'e'.repeat(201)],
    ['with a newline', 'order\n42'],
    ['with a carriage return', 'order\r42'],
    ['with a tab', 'order\t42'],
    ['with NUL', 'order\u000042'],
    ['with DEL', 'order\u007f42'],
    ['with a C1 next-line', 'order\u008542'],
    ['with a Unicode line separator', 'order\u202842'],
    ['as a number', 42],
  ])('refuses external_ref %s', async (_label, externalRef) => {
    await expectRefused({ ...BASE, external_ref: externalRef }, 'external_ref');
  });

  it('accepts external_ref of 200 printable characters, including non-ASCII', async () => {
    await expectValid({ ...BASE, external_ref: 'é'.repeat(100) + 'e'.repeat(100) });
  });

  it.each([
    ['missing', undefined],
    ['an empty string', ''],
    ['null', null],
    ['a number', 5],
    ['a boolean', true],
    ['an array', ['hi']],
  ])('refuses input %s', async (_label, input) => {
    await expectRefused({ agent: AGENT, input }, 'input');
  });

  it.each([['a string', 'x'], ['an object', { order: 7 }], ['an empty object', {}]])('accepts input as %s', async (_label, input) => {
    await expectValid({ agent: AGENT, input });
  });

  it.each([
    ['agent missing', { input: 'hi' }, 'agent'],
    ['agent as a number', { agent: 5, input: 'hi' }, 'agent'],
    ['metadata as a string', { ...BASE, metadata: 'x' }, 'metadata'],
    ['metadata as an array', { ...BASE, metadata: [] }, 'metadata'],
    ['locale as a number', { ...BASE, locale: 5 }, 'locale'],
  ])('refuses %s without coercion', async (_label, body, naming) => {
    await expectRefused(body, naming);
  });

  it.each([['an array', []], ['a string', 'hi'], ['a number', 5], ['null', null]])('refuses a body that is %s', async (_label, body) => {
    await expectRefused(body, 'body');
  });
});

describe('validation comes first and changes nothing', () => {
  it('answers 400, not 401, for an invalid response_format and for a forbidden option sent without a credential', async () => {
    for (const body of [
      { ...BASE, response_format: { type: 'json_schema', schema: { type: 'object', frobnicate: 1 } } },
      { ...BASE, options: { model: 'gpt-x' } },
    ]) {
      const res = await post(body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: { code: 'invalid_request', message: expect.any(String), request_id: res.headers.get('x-request-id') } });
    }
  });

  it('refuses invalid bodies from a real caller without calling the provider or recording anything', async () => {
    // Listened to by a partner: its runs would write outbox events.
    const t = await tenant({ listened: true });
    const bodies = [
      { agent: t.agent, input: 'hi', model: 'gpt-x' },
      { agent: t.agent, input: 'hi', options: { top_p: 0.5 } },
      { agent: t.agent, input: 'hi', options: { unknown_option: 1 } },
      { agent: t.agent, input: 'hi', timeout_ms: 120001 },
      { agent: t.agent, input: 'hi', response_format: { type: 'json_schema', schema: OBJECT_SCHEMA, strict: false } },
      { agent: t.agent, input: 'hi', request_context: { tenant_id: 'ws_other' } },
      { agent: t.agent, input: '' },
    ];
    for (const body of bodies) {
      const res = await post(body, t.key);
      expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status: 400, code: 'invalid_request' });
    }
    expect(await providerRequests(t.model)).toHaveLength(0);
    const [recorded] = await db().query<{ runs: number; ledger: number; events: number; credits: number }>(
      `SELECT (SELECT count(*)::int FROM runs WHERE workspace_id = w.id) AS runs,
              (SELECT count(*)::int FROM ledger_lines WHERE workspace_id = w.id) AS ledger,
              (SELECT count(*)::int FROM outbox_events WHERE workspace_id = w.id) AS events,
              w.credits
         FROM workspaces w WHERE w.public_id = :ws`,
      { replacements: { ws: t.workspace }, type: QueryTypes.SELECT },
    );
    expect(recorded).toEqual({ runs: 0, ledger: 0, events: 0, credits: 1_000_000 });
  });
});

describe('valid edge cases reach the provider', () => {
  it('runs bodies at the edges of every rule and answers 200', async () => {
    const t = await tenant();
    const attachments = ['file', 'image', 'audio', 'video', 'document'].map((type, i) => ({ ref: `${i}`.repeat(512), mime_type: 'm'.repeat(128), name: 'n'.repeat(255), type }));
    const bodies = [
      { agent: t.agent, input: 'hi', timeout_ms: 120000 },
      { agent: t.agent, input: 'hi', timeout_ms: 500, options: { timeout_ms: 5000 } },
      { agent: t.agent, input: 'hi', channel: '' },
      { agent: t.agent, input: 'hi', channel: 'voice', external_ref: `ref-${'é'.repeat(100)}`.padEnd(200, 'x') },
      { agent: t.agent, input: { order: 7 }, attachments },
      { agent: t.agent, input: 'hi', request_context: { customer_note: 'x' }, options: { knowledge_policy: 'none', memory_policy: 'none', tool_policy: 'none' } },
    ];
    for (const body of bodies) {
      const res = await post(body, t.key);
      expect({ status: res.status, run: res.body.status }).toEqual({ status: 200, run: 'completed' });
    }
    const sent = await providerRequests(t.model);
    expect(sent).toHaveLength(bodies.length);
    const attachmentTurn = JSON.stringify(sent[4].body.messages);
    for (const a of attachments) expect(attachmentTurn).toContain(a.ref);
  });

  it('runs json_schema with a 64-character name and strict true', async () => {
    const t = await tenant();
    await scriptModel(t.model, [{ text: '{"answer":"yes"}' }]);
    const res = await post({ agent: t.agent, input: 'hi', response_format: { type: 'json_schema', name: 'n'.repeat(64), schema: OBJECT_SCHEMA, strict: true } }, t.key);
    expect(res.status).toBe(200);
    expect(res.body.output).toEqual([{ type: 'json', json: { answer: 'yes' } }]);
  });

  it('sends the nested response_format, not the flat one, to the provider', async () => {
    const nestedJson = await tenant();
    await scriptModel(nestedJson.model, [{ text: '{"ok":true}' }]);
    const a = await post({ agent: nestedJson.agent, input: 'hi', response_format: 'text', options: { response_format: 'json_object' } }, nestedJson.key);
    expect(a.status).toBe(200);
    expect(a.body.output).toEqual([{ type: 'json', json: { ok: true } }]);
    expect((await providerRequests(nestedJson.model))[0].body.response_format).toEqual({ type: 'json_object' });

    const nestedText = await tenant();
    await scriptModel(nestedText.model, [{ text: 'plain words' }]);
    const b = await post({ agent: nestedText.agent, input: 'hi', response_format: 'json_object', options: { response_format: 'text' } }, nestedText.key);
    expect(b.status).toBe(200);
    expect(b.body.output).toEqual([{ type: 'text', text: 'plain words' }]);
    expect((await providerRequests(nestedText.model))[0].body).not.toHaveProperty('response_format');
  });
});
