/**
 * Which provider a model name goes to (docs/operations.md, "Model providers"). `a/stub-model` is
 * model `stub-model` on provider `a`; a bare name goes to the first provider. Only the text before the
 * first `/` can name a provider, so `a/meta-llama/Llama-3` is model `meta-llama/Llama-3` on `a`.
 */
export interface ModelRef {
  provider: string;
  model: string;
}

/** The providers a name is read against: their names, first the one bare names go to, and whether the operator declared them (MODEL_PROVIDERS). */
export interface ProviderNames {
  names: readonly string[];
  declared: boolean;
}

/**
 * The provider and model a name means, or the provider it names that is not one. Without
 * MODEL_PROVIDERS (one provider, `default`), a name whose prefix is not `default` is the model's
 * whole name, as it always was (`meta-llama/Llama-3` is a model): only declared providers make a
 * prefix a provider's name, and then an unknown prefix is refused where the agent is saved.
 */
export function readModelName(name: string, providers: ProviderNames): ModelRef | { unknownProvider: string } {
  const slash = name.indexOf('/');
  const first = providers.names[0];
  if (slash > 0) {
    const prefix = name.slice(0, slash);
    if (providers.names.includes(prefix)) return { provider: prefix, model: name.slice(slash + 1) };
    if (providers.declared) return { unknownProvider: prefix };
  }
  return { provider: first, model: name };
}

/**
 * Where a call may go, in order: the agent's model, then its fallback models, each once. At run time
 * a name that no longer reads (an operator removed a provider after the agent was saved) goes to the
 * first provider whole, rather than fail a run its agent was accepted with.
 */
export function modelRoute(model: string, fallbacks: readonly string[] | undefined, providers: ProviderNames): ModelRef[] {
  const route: ModelRef[] = [];
  for (const name of [model, ...(fallbacks ?? [])]) {
    const read = readModelName(name, providers);
    const ref = 'unknownProvider' in read ? { provider: providers.names[0], model: name } : read;
    if (!route.some((r) => r.provider === ref.provider && r.model === ref.model)) route.push(ref);
  }
  return route;
}

/** How the run's log, timeline and usage name the model that answered: `b/stub-model` once providers are declared, the model's own name otherwise (as before). */
export function answeredBy(provider: string, model: string, providers: ProviderNames): string {
  return providers.declared ? `${provider}/${model}` : model;
}
