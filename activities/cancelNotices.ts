import { subscriber } from '../infra/redis';
import { RUN_CANCEL_PATTERN } from '../domain/streamEvents';
import { logger } from '../infra/logger';

const watchers = new Map<string, Set<AbortController>>();
let listening: Promise<unknown> | undefined;

/** This process hears every run's cancel announcement (runs/cancelRun.ts) on one pattern subscription. */
function listen(): Promise<unknown> {
  if (listening) return listening;
  const connection = subscriber();
  connection.on('pmessage', (_pattern: string, channel: string) => {
    const runId = channel.slice('run:'.length, -':cancel'.length);
    for (const controller of watchers.get(runId) ?? []) controller.abort();
  });
  listening = connection.psubscribe(RUN_CANCEL_PATTERN).catch((err) => {
    listening = undefined;
    // Without it, a call stops at the heartbeat that carries Temporal's cancel, as before.
    logger.warn({ err: String(err) }, 'run cancel announcements not heard');
  });
  return listening;
}

export interface CancelNotice {
  /** Aborted when the API announces that it cancelled the run. */
  signal: AbortSignal;
  /** Resolves once announcements are heard (the process's subscription is in place). */
  listening: Promise<unknown>;
  release(): void;
}

/** Watches for the announced cancel of one run while its model call is in flight. */
export function watchCancel(runId: string): CancelNotice {
  const listening = listen();
  const controller = new AbortController();
  let set = watchers.get(runId);
  if (!set) watchers.set(runId, (set = new Set()));
  set.add(controller);
  return {
    signal: controller.signal,
    listening,
    release() {
      set!.delete(controller);
      if (set!.size === 0 && watchers.get(runId) === set) watchers.delete(runId);
    },
  };
}
