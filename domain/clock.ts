let current: () => number = Date.now;

/**
 * Milliseconds since the epoch, for decisions that depend on elapsed time (idempotency expiry,
 * stale claims, rate-limit windows). One injectable source so tests can move time instead of waiting.
 */
export function now(): number {
  return current();
}

/** Replaces the clock; called without an argument it goes back to the system clock. */
export function setClock(clock?: () => number): void {
  current = clock ?? Date.now;
}
