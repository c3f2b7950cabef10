import { estimateTokens, type Usage } from '../domain/usage';
import type { ChatMessage } from './providers/types';

type Counter = (text: string) => number;

/** OpenAI's encodings by model family (gpt-tokenizer): o200k_base for the GPT-4o generation on, cl100k_base before it. */
const FAMILIES: [RegExp, () => Counter][] = [
  [/^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|chatgpt-|o\d)/, () => require('gpt-tokenizer/encoding/o200k_base').countTokens],
  [/^(gpt-4|gpt-3\.5)/, () => require('gpt-tokenizer/encoding/cl100k_base').countTokens],
];
const loaded = new Map<RegExp, Counter>();

/** A real tokenizer where the model is known (its encoding loaded on first use), else the estimate (4 characters a token). */
function counterFor(model: string): Counter {
  const family = FAMILIES.find(([pattern]) => pattern.test(model));
  if (!family) return estimateTokens;
  if (!loaded.has(family[0])) loaded.set(family[0], family[1]());
  return loaded.get(family[0])!;
}

/** Tokens each chat message adds beside its content (OpenAI's own accounting: role and separators), and the reply's priming. */
const PER_MESSAGE = 3;
const PRIMING = 3;

/**
 * What a call used when its provider reported no usage (some OpenAI-compatible servers ignore
 * `stream_options`, some proxies drop the field): the prompt and the reply counted here, so no work
 * done is billed zero. Tool calls count as their names and arguments.
 */
export function countedUsage(model: string, messages: ChatMessage[], reply: { text: string; refusal?: string; toolCalls: { name: string; arguments: string }[] }): Usage {
  const count = counterFor(model);
  const input = messages.reduce((n, m) => n + PER_MESSAGE + count(m.content ?? '') + ('tool_calls' in m ? (m.tool_calls ?? []).reduce((t, c) => t + count(c.name + c.arguments), 0) : 0), PRIMING);
  const output = count(reply.text) + count(reply.refusal ?? '') + reply.toolCalls.reduce((n, c) => n + count(c.name + c.arguments), 0);
  return { input_tokens: input, output_tokens: output, total_tokens: input + output, cached_tokens: 0 };
}
