/**
 * The floor's one activity does nothing, so what the floor measures is Temporal's own cost; for the
 * burst it holds `ms` first, as the run's provider call does, on a timer that costs no CPU.
 */
export async function noop(ms = 0): Promise<void> {
  if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms));
}
