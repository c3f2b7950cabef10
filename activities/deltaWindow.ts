import { DELTA_WINDOW_MS } from '../domain/timings';

/**
 * A streamed reply's chunks on their way to the run's event stream (domain/timings.ts,
 * DELTA_WINDOW_MS): a chunk goes at once when none went in the last window, and chunks that come
 * within a window go together, as one delta, at its end. What a client reads joins to the same text;
 * it reads it in fewer, longer deltas.
 */
export class DeltaWindow {
  private pending = '';
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly send: (delta: string) => void,
    private readonly windowMs = DELTA_WINDOW_MS,
  ) {}

  push(chunk: string): void {
    if (this.timer) {
      this.pending += chunk;
      return;
    }
    this.send(chunk);
    this.open();
  }

  /** Sends what the window holds now: the reply ended, or stopped. */
  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.sendPending();
  }

  private open(): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      // A window that sent something opens the next one; a quiet one lets the next chunk go at once.
      if (this.sendPending()) this.open();
    }, this.windowMs);
  }

  private sendPending(): boolean {
    if (!this.pending) return false;
    const delta = this.pending;
    this.pending = '';
    this.send(delta);
    return true;
  }
}
