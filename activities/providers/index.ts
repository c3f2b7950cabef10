import { config } from '../../infra/config';
import { modelRoute, type ProviderNames } from '../../domain/modelRoutes';
import { LocalProvider } from './local';
import { OpenAIProvider } from './openai';
import type { Limits } from './pacing';
import type { ModelProvider } from './types';

/** A provider as the router calls it: its name, whether failures open its circuit (declared providers only: activities/providers/health.ts), and its limits (activities/providers/pacing.ts). */
export interface NamedProvider {
  name: string;
  provider: ModelProvider;
  circuit: boolean;
  limits: Limits;
}

interface Providers {
  byName: Map<string, NamedProvider>;
  names: ProviderNames;
}

let providers: Providers | undefined;

/**
 * The providers of MODEL_PROVIDERS, or the one MODEL_PROVIDER names (`default`, as before), built
 * once per worker process.
 */
export function modelProviders(): Providers {
  if (!providers) {
    const c = config();
    const { declared } = c.modelProviders;
    const options = { structuredOutput: c.modelStructuredOutput, jsonObjectGrammar: c.modelJsonObjectGrammar };
    const built = declared
      ? c.modelProviders.providers.map((p) => ({ name: p.name, provider: new OpenAIProvider({ baseURL: p.baseUrl, apiKey: p.apiKey, ...options }) as ModelProvider, circuit: true, limits: { maxConcurrency: p.maxConcurrency, rpm: p.rpm } }))
      : [{ name: 'default', provider: c.modelProvider === 'openai' ? new OpenAIProvider({ baseURL: c.modelBaseUrl, apiKey: c.modelApiKey, ...options }) : new LocalProvider(), circuit: false, limits: {} }];
    providers = { byName: new Map(built.map((p) => [p.name, p])), names: { names: built.map((p) => p.name), declared } };
  }
  return providers;
}

/** The first provider: the one bare model names go to. */
export function modelProvider(): ModelProvider {
  const { byName, names } = modelProviders();
  return byName.get(names.names[0])!.provider;
}

/** The provider a model name goes to first (its prompt is counted by that provider's server). */
export function providerOf(model: string): ModelProvider {
  const { byName, names } = modelProviders();
  return byName.get(modelRoute(model, [], names)[0].provider)!.provider;
}
