import { createOpenAI } from '@ai-sdk/openai';
import { generateText } from 'ai';
import OpenAI from 'openai';
import { callsHeld, providerRequests, releaseHeld, scriptModel, tenant, type Tenant, until, useApi } from './support/stack';
import { conversationsOf, expectOneRun, runsOf } from './support/v2Side';

/**
 * The `/v1/responses` surface through OpenAI's Node SDK (and the AI SDK, whose default OpenAI model
 * speaks it): stored turns continued with previous_response_id, stateless ones, streams with
 * sequence numbers, background runs polled and resumed, and cancel.
 */
const api = useApi();
const SCOPES = ['responses:create', 'messages:create', 'conversations:create'];

const client = (t: Tenant) => new OpenAI({ baseURL: `${api.url}/v1`, apiKey: t.key, maxRetries: 0 });

describe('OpenAI SDK: responses', () => {
  it('answers a response, and continues its conversation with previous_response_id', async () => {
    const t = await tenant({ scopes: SCOPES });
    await scriptModel(t.model, [{ text: 'Nice to meet you, Ada.' }, { text: 'Your name is Ada.' }]);
    const openai = client(t);
    const first = await openai.responses.create({ model: t.agent, input: 'My name is Ada.' });
    expect(first).toMatchObject({ id: expect.stringMatching(/^run_/), object: 'response', status: 'completed', output_text: 'Nice to meet you, Ada.', usage: { input_tokens: expect.any(Number), input_tokens_details: { cached_tokens: 0 } } });
    expect(first.output[0]).toMatchObject({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Nice to meet you, Ada.' }] });
    const second = await openai.responses.create({ model: t.agent, input: 'What is my name?', previous_response_id: first.id });
    expect(second.output_text).toBe('Your name is Ada.');
    const [, sent] = await providerRequests(t.model);
    expect(sent.body.messages.slice(1)).toEqual([
      { role: 'user', content: 'My name is Ada.' },
      { role: 'assistant', content: 'Nice to meet you, Ada.' },
      { role: 'user', content: 'What is my name?' },
    ]);
    expect((await openai.responses.retrieve(first.id)).output_text).toBe('Nice to meet you, Ada.');
    const run = await call2v2(t, second.id);
    expect(run.conversation).toBe(first.conversation?.id);
  });

  it('opens a stored response\'s conversation with its run: none for a refused request, one for a retried one', async () => {
    const poor = await tenant({ scopes: SCOPES, credits: 1 });
    await expect(client(poor).responses.create({ model: poor.agent, input: 'hi' })).rejects.toMatchObject({ status: 402, code: 'usage_blocked' });
    expect(await conversationsOf(poor)).toBe(0);
    const t = await tenant({ scopes: SCOPES });
    await scriptModel(t.model, [{ text: 'Once.' }, { text: 'Twice.' }]);
    // Streamed, a retry is not answered from a stored body: it attaches to the run the first began.
    const ask = async () => {
      const events: { type: string; response?: { id: string; conversation?: { id: string } } }[] = [];
      for await (const event of await client(t).responses.create({ model: t.agent, input: 'hi', stream: true }, { headers: { 'Idempotency-Key': 'stored-retry-1' } })) events.push(event as never);
      return events.at(-1)!;
    };
    const [first, again] = [await ask(), await ask()];
    expect(first.type).toBe('response.completed');
    expect(again).toMatchObject({ type: 'response.completed', response: { id: first.response!.id, conversation: { id: first.response!.conversation!.id } } });
    expect(await conversationsOf(t)).toBe(1);
    expect(await runsOf(t)).toBe(1);
  });

  it('runs statelessly with store: false, on responses:create alone', async () => {
    const t = await tenant({ scopes: ['responses:create'] });
    await scriptModel(t.model, [{ text: 'Stateless.' }]);
    const answer = await client(t).responses.create({ model: t.agent, input: [{ role: 'user', content: 'hi' }], store: false, instructions: 'Be terse.' });
    expect(answer.output_text).toBe('Stateless.');
    expect((await providerRequests(t.model))[0].body.messages[1]).toEqual({ role: 'system', content: 'Be terse.' });
    await expectOneRun(api.url, t, answer.id);
    // A stored one needs messages:create too.
    await expect(client(t).responses.create({ model: t.agent, input: 'hi' })).rejects.toMatchObject({ status: 403, code: 'permission_denied' });
  });

  it('streams the Responses events with increasing sequence numbers, and the text they add up to', async () => {
    const t = await tenant({ scopes: SCOPES });
    await scriptModel(t.model, [{ chunks: ['Stre', 'amed ', 'text.'] }]);
    const stream = await client(t).responses.create({ model: t.agent, input: 'Stream it.', stream: true });
    const events: { type: string; sequence_number: number; delta?: string }[] = [];
    for await (const event of stream) events.push(event as never);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events[0].type).toBe('response.created');
    expect(events.at(-1)!.type).toBe('response.completed');
    expect(events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('')).toBe('Streamed text.');
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['response.output_item.added', 'response.content_part.added', 'response.output_text.done', 'response.output_item.done']));
    await expectOneRun(api.url, t, (events.at(-1) as unknown as { response: { id: string } }).response.id, 'message');
  });

  it('is incomplete when the answer stopped at its cap: status, incomplete_details and the terminal event', async () => {
    const t = await tenant({ scopes: SCOPES });
    await scriptModel(t.model, [{ text: 'Cut off in the', truncated: true }, { chunks: ['Cut ', 'off'], truncated: true }]);
    const openai = client(t);
    const answer = await openai.responses.create({ model: t.agent, input: 'Go on forever.' });
    expect(answer).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output_text: 'Cut off in the' });
    const events: { type: string; response?: { status: string } }[] = [];
    for await (const event of await openai.responses.create({ model: t.agent, input: 'Again.', stream: true })) events.push(event as never);
    expect(events.at(-1)).toMatchObject({ type: 'response.incomplete', response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } } });
    expect((await openai.responses.retrieve(answer.id)).status).toBe('incomplete');
    expect((await expectOneRun(api.url, t, answer.id, 'message')).incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(await runsOf(t)).toBe(2);
  });

  it("streams text said before the caller's function calls as a message of its own, closed before them", async () => {
    const lookup = { type: 'http', name: 'lookup', description: 'Look a word up', parameters: { type: 'object', properties: { word: { type: 'string' } } }, runs_on: 'client' };
    const t = await tenant({ scopes: SCOPES, config: { tools: [lookup] } });
    await scriptModel(t.model, [{ chunks: ['Let me ', 'check.'], toolCalls: [{ name: 'lookup', arguments: '{"word":"sea"}' }] }]);
    const events: { type: string; output_index?: number; item?: { type: string }; response?: { output: { type: string }[]; output_text: string } }[] = [];
    for await (const event of await client(t).responses.create({ model: t.agent, input: 'What does sea mean?', stream: true })) events.push(event as never);
    const done = events.filter((e) => e.type === 'response.output_item.done').map((e) => [e.output_index, e.item!.type]);
    expect(done).toEqual([[0, 'message'], [1, 'function_call']]);
    expect(events.at(-1)).toMatchObject({ type: 'response.completed', response: { output_text: 'Let me check.' } });
    expect(events.at(-1)!.response!.output.map((item) => item.type)).toEqual(['message', 'function_call']);
  });

  it('runs in the background: answered queued at once, polled to its end, its stream resumed after a sequence number', async () => {
    const t = await tenant({ scopes: SCOPES });
    await scriptModel(t.model, [{ chunks: ['Back', 'ground.'], hold: true }]);
    const openai = client(t);
    const queued = await openai.responses.create({ model: t.agent, input: 'Take your time.', background: true });
    expect(['queued', 'in_progress']).toContain(queued.status);
    expect(queued.background).toBe(true);
    await callsHeld(t.model, 1);
    expect((await openai.responses.retrieve(queued.id)).status).toBe('in_progress');
    await releaseHeld(t.model);
    const done = await until(async () => {
      const polled = await openai.responses.retrieve(queued.id);
      return polled.status === 'completed' ? polled : undefined;
    }, 'the background response to complete');
    expect(done.output_text).toBe('Background.');
    // Every read shows the time the response was created.
    expect(done.created_at).toBe(queued.created_at);
    // The whole stream, then the same stream after its third event.
    const all: { sequence_number: number; type: string }[] = [];
    for await (const event of await openai.responses.retrieve(queued.id, { stream: true })) all.push(event as never);
    const rest: { sequence_number: number; type: string }[] = [];
    for await (const event of await openai.responses.retrieve(queued.id, { stream: true, starting_after: 2 })) rest.push(event as never);
    expect(rest).toEqual(all.slice(3));
    expect(all.at(-1)).toMatchObject({ type: 'response.completed', response: { created_at: queued.created_at } });
    expect(await runsOf(t)).toBe(1);
  });

  it('cancels a response', async () => {
    const t = await tenant({ scopes: SCOPES });
    await scriptModel(t.model, [{ text: 'never', hold: true }]);
    const openai = client(t);
    const queued = await openai.responses.create({ model: t.agent, input: 'Wait.', background: true });
    await callsHeld(t.model, 1);
    const cancelled = await openai.responses.cancel(queued.id);
    expect(cancelled.status).toBe('cancelled');
    expect((await call2v2(t, queued.id)).status).toBe('cancelled');
  });

  it("answers the AI SDK's default OpenAI model, which speaks the Responses API", async () => {
    const t = await tenant({ scopes: SCOPES });
    await scriptModel(t.model, [{ text: 'Through responses.' }]);
    const result = await generateText({ model: createOpenAI({ baseURL: `${api.url}/v1`, apiKey: t.key })(t.agent), prompt: 'hello' });
    expect(result.text).toBe('Through responses.');
    expect(await runsOf(t)).toBe(1);
  });
});

async function call2v2(t: Tenant, runId: string): Promise<Record<string, any>> {
  const res = await fetch(`${api.url}/api/v2/runs/${runId}`, { headers: { authorization: `Bearer ${t.key}` } });
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, any>;
}
