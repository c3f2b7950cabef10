/**
 * MODEL_PROVIDERS (docs/operations.md, "Model providers"): the operator's OpenAI-compatible providers,
 * checked at startup so a typo refuses to start rather than fail runs. Unset, MODEL_BASE_URL and
 * MODEL_API_KEY make one provider named `default`, exactly as before.
 */
export interface ProviderConfig {
  name: string;
  /** Undefined: the `openai` package's own (api.openai.com). */
  baseUrl: string | undefined;
  apiKey: string;
  maxConcurrency?: number;
  rpm?: number;
}

export interface ModelProviders {
  providers: ProviderConfig[];
  /** Whether MODEL_PROVIDERS declared them: names then read as `provider/model`, and failing providers open a circuit. */
  declared: boolean;
}

/** A provider's name: what comes before the `/` of `provider/model`, a metric label and a Redis key. */
const PROVIDER_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$/;
const KEYS = ['name', 'base_url', 'api_key', 'api_key_env', 'max_concurrency', 'rpm'];

function refuse(message: string): never {
  throw new Error(`MODEL_PROVIDERS: ${message} (docs/operations.md, "Model providers")`);
}

function positive(value: unknown, where: string): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isSafeInteger(value) || (value as number) < 1) refuse(`${where} must be a positive integer, got ${JSON.stringify(value)}`);
  return value as number;
}

function provider(raw: unknown, i: number, env: NodeJS.ProcessEnv): ProviderConfig {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) refuse(`entry ${i} must be an object`);
  const p = raw as Record<string, unknown>;
  const where = typeof p.name === 'string' ? `provider "${p.name}"` : `entry ${i}`;
  const unknown = Object.keys(p).filter((k) => !KEYS.includes(k));
  if (unknown.length > 0) refuse(`${where} has unknown keys ${unknown.join(', ')}; it takes ${KEYS.join(', ')}`);
  if (typeof p.name !== 'string' || !PROVIDER_NAME.test(p.name)) refuse(`${where}: name must be 1 to 40 letters, digits, '.', '_' or '-' (no '/'), got ${JSON.stringify(p.name)}`);
  let baseUrl: URL | undefined;
  try {
    baseUrl = typeof p.base_url === 'string' ? new URL(p.base_url) : undefined;
  } catch {
    baseUrl = undefined;
  }
  if (!baseUrl || !['http:', 'https:'].includes(baseUrl.protocol)) refuse(`${where}: base_url must be an http(s) URL, got ${JSON.stringify(p.base_url)}`);
  if ((p.api_key === undefined) === (p.api_key_env === undefined)) refuse(`${where} needs exactly one of api_key or api_key_env`);
  if (p.api_key !== undefined && (typeof p.api_key !== 'string' || p.api_key === '')) refuse(`${where}: api_key must be a non-empty string`);
  let apiKey = p.api_key as string | undefined;
  if (p.api_key_env !== undefined) {
    if (typeof p.api_key_env !== 'string' || !env[p.api_key_env]) refuse(`${where}: api_key_env names ${JSON.stringify(p.api_key_env)}, which is not set`);
    apiKey = env[p.api_key_env];
  }
  return {
    name: p.name,
    baseUrl: p.base_url as string,
    apiKey: apiKey!,
    ...(p.max_concurrency !== undefined && { maxConcurrency: positive(p.max_concurrency, `${where}: max_concurrency`) }),
    ...(p.rpm !== undefined && { rpm: positive(p.rpm, `${where}: rpm`) }),
  };
}

export function modelProvidersFrom(env: NodeJS.ProcessEnv): ModelProviders {
  const raw = env.MODEL_PROVIDERS;
  if (raw === undefined || raw.trim() === '') {
    return { providers: [{ name: 'default', baseUrl: env.MODEL_BASE_URL || undefined, apiKey: env.MODEL_API_KEY || 'unset' }], declared: false };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    refuse(`not valid JSON: ${(err as Error).message}`);
  }
  if (!Array.isArray(parsed) || parsed.length === 0) refuse('must be a non-empty JSON array of providers');
  const providers = parsed.map((p, i) => provider(p, i, env));
  const names = providers.map((p) => p.name);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice) refuse(`two providers are named "${twice}"`);
  return { providers, declared: true };
}
