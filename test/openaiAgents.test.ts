import { Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, run, setTracingDisabled, tool } from '@openai/agents';
import OpenAI from 'openai';
import { z } from 'zod';
import { providerRequests, scriptModel, tenant, useApi } from './support/stack';
import { expectOneRun, runsOf } from './support/v2Side';

/**
 * OpenAI's Agents SDK with one of our agents as its model: its tool loop runs the agent's client-run
 * tool on the caller's side, through `/v1/chat/completions`, as the SDK loops with OpenAI's models.
 */
setTracingDisabled(true);
const api = useApi();

const WEATHER = { type: 'http', name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, runs_on: 'client' };

describe('OpenAI Agents SDK', () => {
  const chat = (client: OpenAI, agent: string) => new OpenAIChatCompletionsModel(client, agent);
  const responses = (client: OpenAI, agent: string) => new OpenAIResponsesModel(client, agent);
  it.each([
    ['Chat Completions', chat, 'response' as const, false],
    ['Chat Completions, streamed', chat, 'response' as const, true],
    ['the Responses API (its default)', responses, 'message' as const, false],
    ['the Responses API, streamed', responses, 'message' as const, true],
  ])("runs an agent whose model is ours through %s, looping through the agent's client-run tool: one run, the tool run by the caller", async (_api, modelOf, kind, stream) => {
    const t = await tenant({ scopes: ['responses:create', 'messages:create', 'conversations:create'], config: { tools: [WEATHER] } });
    await scriptModel(t.model, [{ toolCalls: [{ name: 'get_weather', arguments: '{"city":"Paris"}' }] }, { text: 'It is sunny in Paris.' }]);
    const ranWith: string[] = [];
    const getWeather = tool({
      name: 'get_weather',
      description: 'The weather in a city',
      parameters: z.object({ city: z.string() }),
      execute: async ({ city }) => {
        ranWith.push(city);
        return `sunny in ${city}`;
      },
    });
    const client = new OpenAI({ baseURL: `${api.url}/v1`, apiKey: t.key, maxRetries: 0 });
    const agent = new Agent({ name: 'Weather', instructions: 'Use your tools.', model: modelOf(client, t.agent), tools: [getWeather] });
    const result = stream ? await streamedToTheEnd(agent, 'What is the weather in Paris?') : await run(agent, 'What is the weather in Paris?');
    expect(result.finalOutput).toBe('It is sunny in Paris.');
    expect(ranWith).toEqual(['Paris']);
    // The tool's output reached the model as the result of its call, in the same run.
    const [, second] = await providerRequests(t.model);
    expect(second.body.messages.at(-1)).toEqual({ role: 'tool', tool_call_id: expect.any(String), content: 'sunny in Paris' });
    expect(await runsOf(t)).toBe(1);
    const [runId] = (result.rawResponses[0].responseId ?? '').split('.');
    await expectOneRun(api.url, t, runId, kind);
  });
});

/** A streamed run of the SDK, every event read, as a streaming app reads them. */
async function streamedToTheEnd(agent: Agent, input: string) {
  const result = await run(agent, input, { stream: true });
  for await (const _event of result);
  await result.completed;
  return result;
}
