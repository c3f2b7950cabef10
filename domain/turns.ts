/**
 * Turns of one conversation run one at a time, in the order their messages were accepted
 * (docs/api.md, "Turns in order"). A message says what to do when turns before it are still open.
 */
export const CONCURRENCY_POLICIES = ['enqueue', 'reject', 'interrupt'] as const;
export type ConcurrencyPolicy = (typeof CONCURRENCY_POLICIES)[number];

/**
 * A conversation holds at most this many open turns; one more is refused (conversation_busy) under
 * any policy. Ten turns of the longest timeout_ms fit well inside one run's execution margin
 * (domain/timings.ts), so a queued turn never outwaits its own workflow.
 */
export const MAX_OPEN_TURNS = 10;

/** A run that must wait its turn: its conversation, and its number among the conversation's turns. */
export interface TurnRef {
  conversationId: number;
  number: number;
}
