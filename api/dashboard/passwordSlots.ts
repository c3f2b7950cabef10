import { ServiceError } from '../../domain/errors';

/**
 * A password hash takes about 128 MiB and a tenth of a second on one of libuv's four shared threads:
 * at most this many run at once in a process, a few more wait, and the rest are refused, so a burst of
 * sign-ins can neither exhaust memory nor starve the threads that DNS and file reads share.
 */
const MAX_RUNNING = 2;
const MAX_WAITING = 8;

let running = 0;
const waiting: (() => void)[] = [];

export async function withPasswordSlot<T>(work: () => Promise<T>): Promise<T> {
  if (running < MAX_RUNNING) running++;
  else if (waiting.length < MAX_WAITING) await new Promise<void>((resolve) => waiting.push(resolve));
  else throw new ServiceError('rate_limited', 'Too many sign-ins at once: try again in a moment.', { 'Retry-After': '1' });
  try {
    return await work();
  } finally {
    // The slot passes straight to the next waiter, if any.
    const next = waiting.shift();
    if (next) next();
    else running--;
  }
}
