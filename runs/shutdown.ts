/**
 * The API process's shutdown, as the parts that must react to it see it: readiness reports it at
 * once (so the load balancer stops sending new requests), and open event streams end on it without
 * cancelling their runs (their clients resume on another instance with Last-Event-ID).
 */
let shuttingDown = false;
let streamsEnded = false;
const streams = new Set<() => void>();

export function isShuttingDown(): boolean {
  return shuttingDown;
}

export function beginShutdown(): void {
  shuttingDown = true;
}

/** Ends every open event stream (they hand their clients over; nothing is cancelled), and any opened from now on. */
export function endStreams(): void {
  streamsEnded = true;
  for (const end of [...streams]) end();
  streams.clear();
}

/** Registers an open stream's way to end itself on shutdown (at once, if streams have ended); returns its unregistration. */
export function onShutdown(end: () => void): () => void {
  if (streamsEnded) {
    end();
    return () => undefined;
  }
  streams.add(end);
  return () => streams.delete(end);
}
