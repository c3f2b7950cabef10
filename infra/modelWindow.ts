import { config } from './config';

/** The window a provider that reports none is taken to have, unless MODEL_CONTEXT_TOKENS says (docs/operations.md). */
export const DEFAULT_CONTEXT_TOKENS = 128_000;

let known: number | undefined;
let asking: Promise<number> | undefined;

/**
 * The model's context window, in tokens: what one call's prompt and output share. MODEL_CONTEXT_TOKENS
 * when set; otherwise llama.cpp's server (the embedded model) reports its slot's size at /props, asked
 * once per process; any other provider is taken to have DEFAULT_CONTEXT_TOKENS. A run is planned with
 * this figure (runs/planRun.ts) and keeps it: its hold and its calls' output caps use the same one.
 */
export function modelWindow(): Promise<number> {
  const c = config();
  if (c.modelContextTokens) return Promise.resolve(c.modelContextTokens);
  if (known !== undefined) return Promise.resolve(known);
  if (c.modelProvider !== 'openai' || !c.modelBaseUrl) return Promise.resolve((known = DEFAULT_CONTEXT_TOKENS));
  asking ??= reportedWindow(c.modelBaseUrl, c.modelApiKey).finally(() => (asking = undefined));
  return asking;
}

async function reportedWindow(baseUrl: string, apiKey: string): Promise<number> {
  const origin = baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
  try {
    const res = await fetch(`${origin}/props`, { headers: { authorization: `Bearer ${apiKey}` }, signal: AbortSignal.timeout(2_000) });
    const slot = res.ok ? ((await res.json()) as { default_generation_settings?: { n_ctx?: unknown } }).default_generation_settings?.n_ctx : undefined;
    // A server that answers without a slot size is not llama.cpp's: it keeps the default.
    known = typeof slot === 'number' && Number.isInteger(slot) && slot > 0 ? slot : DEFAULT_CONTEXT_TOKENS;
    return known;
  } catch {
    // Not reachable now (starting, or down): the default, which holds more than enough, and asked again next time.
    return DEFAULT_CONTEXT_TOKENS;
  }
}

