import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { DEFAULT_INSTRUCTIONS } from '../domain/agents';
import { call, providerRequests, scriptModel, tenant, type Tenant, until, useApi } from './support/stack';
import { expectOneRun, recordedRuns, runsOf } from './support/v2Side';

/**
 * The `/v1` surface driven by OpenAI's own Node SDK, as its documentation shows it, pointed at this
 * service: chat completions, models and errors. Each checks the v2 side of the same work too.
 */
const api = useApi();

function client(t: Tenant, options: Partial<ConstructorParameters<typeof OpenAI>[0]> = {}): OpenAI {
  return new OpenAI({ baseURL: `${api.url}/v1`, apiKey: t.key, maxRetries: 0, ...options });
}

describe('OpenAI SDK: chat completions', () => {
  it('answers a chat completion with the run: content, usage with cached tokens, finish_reason, one run and one ledger line', async () => {
    const t = await tenant();
    await scriptModel(t.model, [{ text: 'Hello from the agent.', usage: { prompt_tokens: 12, completion_tokens: 5, cached_tokens: 4 } }]);
    const completion = await client(t).chat.completions.create({ model: t.agent, messages: [{ role: 'user', content: 'hello' }] });
    expect(completion).toMatchObject({
      id: expect.stringMatching(/^run_/),
      object: 'chat.completion',
      model: t.agent,
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from the agent.', refusal: null }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17, prompt_tokens_details: { cached_tokens: 4 } },
    });
    const run = await expectOneRun(api.url, t, completion.id);
    expect(run.usage).toEqual({ input_tokens: 12, output_tokens: 5, total_tokens: 17, cached_tokens: 4 });
  });

  it("sends the exchange as the run's history, the caller's system message after the agent's instructions", async () => {
    const t = await tenant({ config: { instructions: 'You are the shop assistant.' } });
    await scriptModel(t.model, [{ text: 'Your order ships today.' }]);
    const completion = await client(t).chat.completions.create({
      model: t.agent,
      messages: [
        { role: 'system', content: 'Answer in English.' },
        { role: 'user', content: 'I ordered a lamp.' },
        { role: 'assistant', content: 'Thanks, I see it.' },
        { role: 'user', content: [{ type: 'text', text: 'When does it ship?' }] },
      ],
    });
    const [sent] = await providerRequests(t.model);
    expect(sent.body.messages).toEqual([
      { role: 'system', content: 'You are the shop assistant.' },
      { role: 'system', content: 'Answer in English.' },
      { role: 'user', content: 'I ordered a lamp.' },
      { role: 'assistant', content: 'Thanks, I see it.' },
      { role: 'user', content: 'When does it ship?' },
    ]);
    await expectOneRun(api.url, t, completion.id);
  });

  it('streams chunks whose deltas add up to the answer, then the usage, then [DONE]', async () => {
    const t = await tenant();
    await scriptModel(t.model, [{ chunks: ['The ', 'answer ', 'is 42.'], usage: { prompt_tokens: 8, completion_tokens: 4 } }]);
    const stream = await client(t).chat.completions.create({ model: t.agent, messages: [{ role: 'user', content: 'Tell me.' }], stream: true, stream_options: { include_usage: true } });
    let text = '';
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    let id = '';
    for await (const chunk of stream) {
      id = chunk.id;
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe('The answer is 42.');
    expect(finish).toBe('stop');
    expect(usage).toMatchObject({ prompt_tokens: 8, completion_tokens: 4, total_tokens: 12 });
    await expectOneRun(api.url, t, id);
  });

  it("says finish_reason length for an answer that stopped at its cap, plain and streamed, and the run says it is incomplete", async () => {
    const t = await tenant();
    await scriptModel(t.model, [{ text: 'The list goes on and', truncated: true }, { chunks: ['And so ', 'on and'], truncated: true }]);
    const completion = await client(t).chat.completions.create({ model: t.agent, messages: [{ role: 'user', content: 'List everything.' }] });
    expect(completion.choices[0]).toMatchObject({ message: { content: 'The list goes on and' }, finish_reason: 'length' });
    const run = await expectOneRun(api.url, t, completion.id);
    expect(run).toMatchObject({ status: 'completed', incomplete_details: { reason: 'max_output_tokens' } });
    let finish: string | null = null;
    for await (const chunk of await client(t).chat.completions.create({ model: t.agent, messages: [{ role: 'user', content: 'Again.' }], stream: true })) finish = chunk.choices[0]?.finish_reason ?? finish;
    expect(finish).toBe('length');
  });

  it("ends a stream with the calls of the agent's client-run tool, and streams the answer to them from there, in one run", async () => {
    const lookup = { type: 'http', name: 'lookup', description: 'Look a word up', parameters: { type: 'object', properties: { word: { type: 'string' } } }, runs_on: 'client' };
    const t = await tenant({ config: { tools: [lookup] } });
    await scriptModel(t.model, [{ chunks: ['Let me ', 'look.'], toolCalls: [{ name: 'lookup', arguments: '{"word":"sea"}' }] }, { chunks: ['It means ', 'the ocean.'] }]);
    const read = async (stream: AsyncIterable<OpenAI.ChatCompletionChunk>) => {
      const chunks: OpenAI.ChatCompletionChunk[] = [];
      for await (const chunk of stream) chunks.push(chunk);
      return { chunks, text: chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), finish: chunks.at(-1)?.choices[0]?.finish_reason };
    };
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What does sea mean?' }];
    const first = await read(await client(t).chat.completions.create({ model: t.agent, messages, stream: true }));
    expect(first.finish).toBe('tool_calls');
    const calls = first.chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(calls).toEqual([{ index: 0, id: expect.stringMatching(/^run_.+\.call_/), type: 'function', function: { name: 'lookup', arguments: '{"word":"sea"}' } }]);
    const answered = [...messages, { role: 'assistant' as const, content: null, tool_calls: [{ id: calls[0].id!, type: 'function' as const, function: { name: 'lookup', arguments: '{"word":"sea"}' } }] }, { role: 'tool' as const, tool_call_id: calls[0].id!, content: 'a large body of salt water' }];
    const second = await read(await client(t).chat.completions.create({ model: t.agent, messages: answered, stream: true }));
    // Only what the run did after the answer: the role first, then the new text.
    expect(second.chunks[0].choices[0].delta).toMatchObject({ role: 'assistant' });
    expect(second).toMatchObject({ text: 'It means the ocean.', finish: 'stop' });
    expect(second.chunks.every((c) => c.id === first.chunks[0].id)).toBe(true);
    await expectOneRun(api.url, t, first.chunks[0].id);
    expect(await runsOf(t)).toBe(1);
  });

  it('keeps a stream open while the run waits for an approver (not for its caller), and streams the answer once approved', async () => {
    const tool = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"refunded":true}'));
    await new Promise<void>((resolve) => tool.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(tool.address() as AddressInfo).port}/refund`;
      const t = await tenant({ scopes: ['responses:create', 'actions:approve'], config: { tools: [{ type: 'http', name: 'refund', parameters: { type: 'object' }, url, approval: 'required' }] } });
      await scriptModel(t.model, [{ toolCalls: [{ name: 'refund', arguments: '{"order":"A1"}' }] }, { chunks: ['Refunded ', 'A1.'] }]);
      const chunks: OpenAI.ChatCompletionChunk[] = [];
      const read = (async () => {
        for await (const chunk of await client(t).chat.completions.create({ model: t.agent, messages: [{ role: 'user', content: 'Refund A1.' }], stream: true })) chunks.push(chunk);
      })();
      const runId = await until(async () => chunks[0]?.id, 'the stream to begin');
      const [pending] = await until(async () => (await call(api.url, 'GET', `/api/v2/runs/${runId}`, { key: t.key })).body.required_action?.calls, 'the approval to be asked for');
      expect(chunks.every((c) => !c.choices[0]?.finish_reason)).toBe(true);
      expect((await call(api.url, 'POST', `/api/v2/runs/${runId}/actions`, { key: t.key, body: { call_id: pending.call_id, decision: 'approve', arguments_sha256: pending.arguments_sha256 } })).status).toBe(200);
      await read;
      expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('Refunded A1.');
      expect(chunks.at(-1)!.choices[0].finish_reason).toBe('stop');
      await expectOneRun(api.url, t, runId);
    } finally {
      tool.close();
    }
  });

  it('parses structured output with a zod schema through the same structured-output path', async () => {
    const t = await tenant();
    await scriptModel(t.model, [{ text: '{"city": "Paris", "population": 2100000}' }]);
    const Place = z.object({ city: z.string(), population: z.number().int() });
    const completion = await client(t).chat.completions.parse({ model: t.agent, messages: [{ role: 'user', content: 'Largest city of France?' }], response_format: zodResponseFormat(Place, 'place') });
    expect(completion.choices[0].message.parsed).toEqual({ city: 'Paris', population: 2100000 });
    const [sent] = await providerRequests(t.model);
    expect(sent.body.response_format).toMatchObject({ type: 'json_schema', json_schema: { name: 'place', schema: expect.objectContaining({ required: ['city', 'population'] }) } });
    await expectOneRun(api.url, t, completion.id);
  });

  it('gives a refusal in message.refusal', async () => {
    const t = await tenant();
    await scriptModel(t.model, [{ refusal: "I can't help with that." }]);
    const completion = await client(t).chat.completions.create({ model: t.agent, messages: [{ role: 'user', content: 'Something forbidden.' }] });
    expect(completion.choices[0].message).toMatchObject({ content: null, refusal: "I can't help with that." });
    await expectOneRun(api.url, t, completion.id);
  });

  it('never starts a second run for a retried request with the same Idempotency-Key', async () => {
    const t = await tenant();
    await scriptModel(t.model, [{ text: 'Once.' }, { text: 'Twice.' }]);
    const ask = () => client(t).chat.completions.create({ model: t.agent, messages: [{ role: 'user', content: 'hi' }] }, { headers: { 'Idempotency-Key': 'chat-retry-1' } });
    const [first, again] = [await ask(), await ask()];
    expect(again.id).toBe(first.id);
    expect(again.choices[0].message.content).toBe('Once.');
    expect(await runsOf(t)).toBe(1);
  });
});

describe('OpenAI SDK: models', () => {
  it("lists the workspace's active agents as models, and reads one by id or by name", async () => {
    const t = await tenant({ scopes: ['responses:create'] });
    const openai = client(t);
    const listed = [];
    for await (const m of openai.models.list()) listed.push(m);
    expect(listed).toEqual([{ id: t.agent, object: 'model', created: expect.any(Number), owned_by: t.workspace, name: 'agent' }]);
    expect(await openai.models.retrieve(t.agent)).toMatchObject({ id: t.agent, object: 'model' });
    expect(await openai.models.retrieve('agent')).toMatchObject({ id: t.agent });
    expect(await runsOf(t)).toBe(0);
  });

  it('runs the agent named by its name', async () => {
    const t = await tenant();
    await scriptModel(t.model, [{ text: 'By name.' }]);
    const completion = await client(t).chat.completions.create({ model: 'agent', messages: [{ role: 'user', content: 'hi' }] });
    expect(completion.choices[0].message.content).toBe('By name.');
    await expectOneRun(api.url, t, completion.id);
  });
});

describe('OpenAI SDK: errors', () => {
  it("raises the SDK's own error classes, with our code, OpenAI's type and the parameter at fault", async () => {
    const t = await tenant();
    const openai = client(t);
    const refused = openai.chat.completions.create({ model: t.agent, messages: [{ role: 'user', content: 'hi' }], temperature: 0.3 });
    await expect(refused).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    await expect(refused).rejects.toMatchObject({ status: 400, code: 'invalid_request', type: 'invalid_request_error', param: 'temperature' });
    // The values an SDK may send on its own are taken as not sent.
    await scriptModel(t.model, [{ text: 'ok' }]);
    await expect(openai.chat.completions.create({ model: t.agent, messages: [{ role: 'user', content: 'hi' }], temperature: 1, n: 1, stream: false })).resolves.toMatchObject({ object: 'chat.completion' });

    await expect(openai.chat.completions.create({ model: 'agt_missing', messages: [{ role: 'user', content: 'hi' }] })).rejects.toMatchObject({ status: 404, code: 'agent_not_found', type: 'not_found_error' });
    await expect(openai.chat.completions.create({ model: 'no such name', messages: [{ role: 'user', content: 'hi' }] })).rejects.toMatchObject({ status: 404, code: 'agent_not_found', param: 'model' });
    await expect(client(t, { apiKey: 'tgcc_not_a_real_key_at_all_0000' }).models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    await expect(openai.chat.completions.create({ model: t.agent, messages: [{ role: 'assistant', content: 'hi' }] })).rejects.toMatchObject({ status: 400, param: 'messages' });
    await expect(
      openai.chat.completions.create({ model: t.agent, messages: [{ role: 'user', content: 'hi' }], tools: [{ type: 'function', function: { name: 'delete_everything', parameters: {} } }] }),
    ).rejects.toMatchObject({ status: 400, param: 'tools' });
    // Only the one accepted request ran.
    expect(await runsOf(t)).toBe(1);
  });

  it('answers a workspace that cannot pay 402 in the same shape', async () => {
    const t = await tenant({ credits: 1 });
    await expect(client(t).chat.completions.create({ model: t.agent, messages: [{ role: 'user', content: 'hi' }] })).rejects.toMatchObject({ status: 402, code: 'usage_blocked', type: 'insufficient_quota' });
    expect(await runsOf(t)).toBe(0);
  });

  it('fails a run whose provider fails as OpenAI does, a 502 the SDK raises', async () => {
    const t = await tenant();
    await scriptModel(t.model, [{ status: 400 }]);
    const failed = client(t).chat.completions.create({ model: t.agent, messages: [{ role: 'user', content: 'hi' }] });
    await expect(failed).rejects.toMatchObject({ status: 502, code: 'provider_unavailable', type: 'server_error' });
    expect(await recordedRuns(t)).toEqual([{ status: 'failed', error_code: 'provider_unavailable' }]);
  });

  it('keeps the default instructions for an agent without its own', async () => {
    const t = await tenant();
    await scriptModel(t.model, [{ text: 'ok' }]);
    const completion = await client(t).chat.completions.create({ model: t.agent, messages: [{ role: 'user', content: 'hi' }] });
    expect((await providerRequests(t.model))[0].body.messages[0]).toEqual({ role: 'system', content: DEFAULT_INSTRUCTIONS });
    await expectOneRun(api.url, t, completion.id);
  });
});
