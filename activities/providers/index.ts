import { config } from '../../infra/config';
import { LocalProvider } from './local';
import { OpenAIProvider } from './openai';
import type { ModelProvider } from './types';

let provider: ModelProvider | undefined;

/** The provider MODEL_PROVIDER names, built once per worker process. */
export function modelProvider(): ModelProvider {
  if (!provider) {
    const c = config();
    provider = c.modelProvider === 'openai' ? new OpenAIProvider({ baseURL: c.modelBaseUrl, apiKey: c.modelApiKey, structuredOutput: c.modelStructuredOutput, jsonObjectGrammar: c.modelJsonObjectGrammar }) : new LocalProvider();
  }
  return provider;
}
