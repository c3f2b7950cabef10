/** A call stopped (cancelled, or at its deadline) while it waited for a provider: nothing of it was being answered, so nothing is charged. */
export class StoppedWaiting extends Error {}

/**
 * Resolves after `ms`, or sooner when `wake` does (another worker handed the call a slot), or rejects
 * when the call is stopped (cancelled, or its deadline): the caller's abort handling takes it from there.
 */
export function pause(ms: number, signal: AbortSignal, wake?: Promise<void>): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new StoppedWaiting('stopped while waiting for a model provider'));
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', stop);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const stop = () => {
      clearTimeout(timer);
      reject(new StoppedWaiting('stopped while waiting for a model provider'));
    };
    signal.addEventListener('abort', stop, { once: true });
    wake?.then(done);
  });
}
