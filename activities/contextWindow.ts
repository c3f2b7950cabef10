import { outputCap, type AgentConfig } from '../domain/agents';
import { estimateTokens } from '../domain/usage';
import type { ChatMessage } from './providers/types';

/** What the chat template adds around each message (SmolLM2's ChatML: `<|im_start|>role\n…<|im_end|>\n`), rounded up. */
const TEMPLATE_TOKENS_PER_MESSAGE = 8;

/** A prompt's size as estimated here (about four characters a token), for providers that count none for us. */
export function estimatedPromptTokens(messages: ChatMessage[]): number {
  return messages.reduce((n, m) => n + TEMPLATE_TOKENS_PER_MESSAGE + estimateTokens(m.content ?? '') + ('tool_calls' in m && m.tool_calls ? estimateTokens(JSON.stringify(m.tool_calls)) : 0), 0);
}

/** The prompt for a given history: everything else in it (instructions, knowledge, the new message, tool rounds) is fixed. */
export type PromptWith = (history: ChatMessage[]) => ChatMessage[];

/** Counts a prompt's tokens exactly as the model server will (llama.cpp does); undefined where it cannot. */
export type PromptCounter = (messages: ChatMessage[]) => Promise<number | undefined>;

export interface FittedPrompt {
  messages: ChatMessage[];
  /** Earlier messages left out so the prompt fits the window. */
  omitted: number;
  /** The call's max_tokens: the output cap, and never more than the window leaves after the prompt. */
  maxTokens: number;
}

/** The fewest output tokens a call is given, even when the prompt seems to fill the window (an estimate may be high). */
const MIN_OUTPUT_TOKENS = 16;

/**
 * Fits a call's prompt into the model's window (`contextTokens`). The history gives way, oldest first
 * and a whole turn at a time, so what is left begins with a user message (tool calls and their results
 * live in the current turn, which is never cut); the instructions, the new message and this run's tool
 * rounds always stay. A quarter of the window, or the output cap if smaller, is kept for the answer.
 * Sizes are estimated, then, where the provider counts (`count`) and there is history to cut, checked
 * and cut again by its count.
 * Runs planned before the window was kept (no `contextTokens`) send the history as it is.
 */
export async function fitToWindow(config: AgentConfig, contextTokens: number | undefined, history: ChatMessage[], promptWith: PromptWith, count: PromptCounter): Promise<FittedPrompt> {
  const cap = outputCap(config, contextTokens);
  if (contextTokens === undefined) return { messages: promptWith(history), omitted: 0, maxTokens: cap };
  const room = contextTokens - Math.min(cap, Math.ceil(contextTokens / 4));
  let from = 0;
  // Scales the estimate to the provider's count once it is known (a model's tokenizer may split finer).
  let scale = 1;
  const dropUntil = (fits: (messages: ChatMessage[]) => boolean) => {
    while (from < history.length && !fits(promptWith(history.slice(from)))) from = nextTurn(history, from);
  };
  dropUntil((messages) => estimatedPromptTokens(messages) <= room);
  // Without history there is nothing to leave out: the estimate bounds max_tokens, and the server stops at its window anyway.
  let counted: number | undefined;
  while (from < history.length && (counted = await count(promptWith(history.slice(from)))) !== undefined && counted > room) {
    scale = Math.max(scale, counted / estimatedPromptTokens(promptWith(history.slice(from))));
    const before = from;
    dropUntil((messages) => estimatedPromptTokens(messages) * scale <= room);
    // The scaled estimate already fitted: drop one more turn, so each count makes progress.
    if (from === before) from = nextTurn(history, from);
    counted = undefined;
  }
  const size = counted ?? Math.ceil(estimatedPromptTokens(promptWith(history.slice(from))) * scale);
  return { messages: promptWith(history.slice(from)), omitted: from, maxTokens: Math.max(MIN_OUTPUT_TOKENS, Math.min(cap, contextTokens - size)) };
}

/** Where the history begins once its oldest turn (a user message and what answered it) is left out. */
function nextTurn(history: ChatMessage[], from: number): number {
  let next = from + 1;
  while (next < history.length && history[next].role !== 'user') next++;
  return next;
}
