import type { Static } from '@sinclair/typebox';
import type { UsageShape } from './runResponse';
/** Token usage, as providers report it and as runs are billed. */
/** A run's token usage (its shape: domain/runResponse.ts). */
export type Usage = Static<typeof UsageShape>;

export const ZERO_USAGE: Usage = { input_tokens: 0, output_tokens: 0, total_tokens: 0, cached_tokens: 0 };

export function addUsage(a: Usage, b: Usage): Usage {
  return {
    input_tokens: a.input_tokens + b.input_tokens,
    output_tokens: a.output_tokens + b.output_tokens,
    total_tokens: a.total_tokens + b.total_tokens,
    cached_tokens: a.cached_tokens + b.cached_tokens,
  };
}

/** About four characters a token: for usage the provider never reported (a call cut short). */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}
