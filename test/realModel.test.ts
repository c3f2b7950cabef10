import { randomUUID } from 'node:crypto';
import { temporal } from '../infra/temporalClient';
import { allFrames, openStream } from './support/sse';
import { call, providerRequests, tenant, useApi } from './support/stack';
import { REAL_MODEL_PREFIX } from './stack/stubProvider';

/**
 * Against a real model's server: llama.cpp's own (xllamacpp) serving SmolLM2-135M-Instruct, started
 * once for the run by test/stack/globalSetup.ts and reached through the stub, which relays `real:`
 * models' requests and answers unchanged. Assertions are on structure and counts, never on the
 * model's words.
 */
const api = useApi();
// A real model on a loaded machine is slow: its runs get the most time a run may have, and the tests
// more than that, so the machine's speed never decides an outcome.
jest.setTimeout(10 * 60_000);
const TIMEOUT_MS = 120_000;
const MODEL_SERVER = process.env.TEST_MODEL_SERVER_URL!;
const MODEL_SERVER_KEY = process.env.TEST_MODEL_SERVER_KEY!;

/** A tenant whose agent's model is relayed to the real model server; `model` is that name. */
async function realTenant(maxOutputTokens = 48) {
  const model = `${REAL_MODEL_PREFIX}${randomUUID()}`;
  return { ...(await tenant({ config: { model, instructions: 'You are a helpful assistant. Answer in one short sentence.', max_output_tokens: maxOutputTokens } })), model };
}

/** Each retried activity attempt of these runs, with the failure Temporal recorded for the attempt before it. */
async function retriedAttempts(runIds: string[]): Promise<string[]> {
  const client = await temporal();
  const retried: string[] = [];
  for (const runId of runIds) {
    const handle = client.workflow.getHandle(runId);
    // Answered at settlement, inside the call: its attempt is in the history once the workflow has closed.
    await handle.result();
    for (const event of (await handle.fetchHistory()).events ?? []) {
      const started = event.activityTaskStartedEventAttributes;
      if ((started?.attempt ?? 1) > 1) retried.push(`${runId} attempt ${started!.attempt}, after: ${started!.lastFailure?.message}`);
    }
  }
  return retried;
}

async function modelServer(path: string, body: unknown): Promise<any> {
  const res = await fetch(MODEL_SERVER + path, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${MODEL_SERVER_KEY}` }, body: JSON.stringify(body) });
  expect(res.status).toBe(200);
  return res.json();
}

/** How many tokens the model server counts in the prompt these messages make, by its own chat template and tokenizer. */
async function promptTokens(messages: unknown): Promise<number> {
  const { prompt } = await modelServer('/apply-template', { messages });
  return (await modelServer('/tokenize', { content: prompt, add_special: true, parse_special: true })).tokens.length;
}

describe('a real model server', () => {
  it('takes requests only with its key: nothing but the service spends its compute', async () => {
    const body = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 });
    const without = await fetch(`${MODEL_SERVER}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(without.status).toBe(401);
    const wrong = await fetch(`${MODEL_SERVER}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer not-the-key' }, body });
    expect(wrong.status).toBe(401);
    expect((await fetch(`${MODEL_SERVER}/health`)).status).toBe(200);
  });

  it('answers a plain run, billed by the tokens the server counted', async () => {
    const t = await realTenant();
    const res = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'Name one fruit.', timeout_ms: TIMEOUT_MS } });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('completed');
    expect(res.body.output).toHaveLength(1);
    expect(res.body.output[0].type).toBe('text');
    expect(res.body.output[0].text.trim().length).toBeGreaterThan(0);
    const [sent] = await providerRequests(t.model);
    expect(res.body.usage.input_tokens).toBe(await promptTokens(sent.body.messages));
    expect(res.body.usage.output_tokens).toBe(sent.relayedUsage!.completion_tokens);
    expect(res.body.usage.output_tokens).toBeGreaterThan(0);
  });

  it('streams deltas that add up to the answer, with the usage the server counted', async () => {
    const t = await realTenant();
    const res = await openStream(api.url, '/api/v2/responses', t.key, { agent: t.agent, input: 'Name two colors.', stream: true, timeout_ms: TIMEOUT_MS });
    expect(res.status).toBe(200);
    const frames = (await allFrames(res)).filter((f) => f.event);
    const deltas = frames.filter((f) => f.event === 'response.output_text.delta');
    expect(frames[0].event).toBe('response.started');
    expect(frames.at(-1)!.event).toBe('response.completed');
    expect(deltas.length).toBeGreaterThan(1);
    const completed = frames.at(-1)!.data;
    expect(completed.output).toEqual([{ type: 'text', text: deltas.map((f) => f.data.delta).join('') }]);
    const [sent] = await providerRequests(t.model);
    expect(sent.body.stream).toBe(true);
    // The server's count of this prompt, and the completion tokens it reported in its stream.
    const status = await call(api.url, 'GET', `/api/v2/runs/${completed.id}`, { key: t.key });
    expect(status.body.usage.input_tokens).toBe(await promptTokens(sent.body.messages));
    expect(status.body.usage.output_tokens).toBe(sent.relayedUsage!.completion_tokens);
    expect(status.body.usage.output_tokens).toBeGreaterThanOrEqual(deltas.length);
  });

  it('answers ten json_schema runs with JSON that fits the schema, each without a repair call', async () => {
    // Room for the most whitespace the server's JSON grammar lets the model put between the tokens.
    const t = await realTenant(256);
    const format = {
      type: 'json_schema',
      name: 'review',
      schema: {
        type: 'object',
        properties: { sentiment: { type: 'string', enum: ['positive', 'negative', 'neutral'] }, recommended: { type: 'boolean' } },
        required: ['sentiment', 'recommended'],
        additionalProperties: false,
      },
    };
    const reviews = ['Great phone, fast and light.', 'It broke after a day.', 'It is a chair.', 'Loved the food!', 'Slow delivery, bad packing.', 'Fine.', 'Best book this year.', 'Too loud.', 'Works as described.', 'Never again.'];
    const answers = await Promise.all(reviews.map((review) => call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: `Review: ${review}`, response_format: format, timeout_ms: TIMEOUT_MS } })));
    for (const res of answers) {
      expect(res.status).toBe(200);
      expect(res.body.output).toHaveLength(1);
      expect(res.body.output[0].type).toBe('json');
      expect(Object.keys(res.body.output[0].json).sort()).toEqual(['recommended', 'sentiment']);
      expect(['positive', 'negative', 'neutral']).toContain(res.body.output[0].json.sentiment);
      expect(typeof res.body.output[0].json.recommended).toBe('boolean');
    }
    // No repair call: the schema reached the server, which held the model to it. An attempt cut off
    // and retried is not a repair (seen once in CI on a loaded machine: 5 of 15 requests cut off, the
    // runs all answered): every answer came from one call that finished.
    const sent = await providerRequests(t.model);
    const finished = sent.filter((request) => !request.aborted).length;
    // Why any call was retried, from the runs' histories: printed for whoever reads the log, not
    // asserted (a retried attempt is not a repair).
    if (sent.length !== 10) console.warn(`${sent.length} provider requests for 10 runs, ${sent.length - finished} cut off; ${(await retriedAttempts(answers.map((res) => res.body.id))).join('; ')}`);
    expect(finished).toBe(10);
    for (const request of sent) expect(request.body.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'review', schema: format.schema, strict: true } });
  });
});
