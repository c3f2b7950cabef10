import { createOpenAI } from '@ai-sdk/openai';
import { ChatOpenAI } from '@langchain/openai';
import { generateObject, generateText, streamText } from 'ai';
import { z } from 'zod';
import { providerRequests, scriptModel, tenant, type Tenant, useApi } from './support/stack';
import { expectOneRun, runsOf } from './support/v2Side';

/**
 * The frameworks people build on OpenAI's API, unchanged but for their base URL and key, driving an
 * agent through `/v1/chat/completions`: Vercel's AI SDK and LangChain. Each request is one run.
 */
const api = useApi();

const place = z.object({ city: z.string(), country: z.string() });

describe('AI SDK (@ai-sdk/openai, chat)', () => {
  const model = (t: Tenant) => createOpenAI({ baseURL: `${api.url}/v1`, apiKey: t.key }).chat(t.agent);

  it('generateText answers with the run, and its usage', async () => {
    const t = await tenant();
    await scriptModel(t.model, [{ text: 'Hi! How can I help?', usage: { prompt_tokens: 9, completion_tokens: 6 } }]);
    const result = await generateText({ model: model(t), prompt: 'hello' });
    expect(result.text).toBe('Hi! How can I help?');
    expect(result.finishReason).toBe('stop');
    expect(result.usage).toMatchObject({ inputTokens: 9, outputTokens: 6, totalTokens: 15 });
    await expectOneRun(api.url, t, result.response.id);
  });

  it('streamText streams the answer', async () => {
    const t = await tenant();
    await scriptModel(t.model, [{ chunks: ['One, ', 'two, ', 'three.'] }]);
    const result = streamText({ model: model(t), prompt: 'Count to three.' });
    let text = '';
    for await (const delta of result.textStream) text += delta;
    expect(text).toBe('One, two, three.');
    expect((await providerRequests(t.model))[0].body.stream).toBe(true);
    await expectOneRun(api.url, t, (await result.response).id);
  });

  it('generateObject gets an object that fits its zod schema', async () => {
    const t = await tenant();
    await scriptModel(t.model, [{ text: '{"city":"Lyon","country":"France"}' }]);
    const result = await generateObject({ model: model(t), schema: place, prompt: 'A city in France.' });
    expect(result.object).toEqual({ city: 'Lyon', country: 'France' });
    expect(await runsOf(t)).toBe(1);
  });
});

describe('LangChain (@langchain/openai)', () => {
  const chat = (t: Tenant) => new ChatOpenAI({ model: t.agent, apiKey: t.key, configuration: { baseURL: `${api.url}/v1` }, maxRetries: 0 });

  it('invoke answers with the run', async () => {
    const t = await tenant();
    await scriptModel(t.model, [{ text: 'Bonjour.' }]);
    const message = await chat(t).invoke('Say hello in French.');
    expect(message.content).toBe('Bonjour.');
    await expectOneRun(api.url, t, message.id!);
  });

  it('stream streams the answer', async () => {
    const t = await tenant();
    await scriptModel(t.model, [{ chunks: ['Un, ', 'deux.'] }]);
    let text = '';
    for await (const chunk of await chat(t).stream('Count in French.')) text += chunk.content;
    expect(text).toBe('Un, deux.');
    expect(await runsOf(t)).toBe(1);
  });

  it('withStructuredOutput returns an object of its schema', async () => {
    const t = await tenant();
    await scriptModel(t.model, [{ text: '{"city":"Nantes","country":"France"}' }]);
    const structured = chat(t).withStructuredOutput(place, { name: 'place' });
    expect(await structured.invoke('A city in France.')).toEqual({ city: 'Nantes', country: 'France' });
    expect(await runsOf(t)).toBe(1);
  });
});
