import type { Dependency } from './dependencyErrors';
import { logger } from './logger';

/**
 * What this process has seen of its dependencies' outages: one log line when a dependency goes away
 * and one when it is back (with how long it was gone), however many calls failed meanwhile, and the
 * metrics an operator alerts on. The API counts with prom-client, a worker with its Temporal
 * runtime's meter: each process says how at its start (setOutageMeter).
 */
export interface OutageMeter {
  /** 1 while the dependency answers, 0 from its first failure until its next success. */
  up(dependency: Dependency, value: 0 | 1): void;
  /** One per outage seen. */
  outage(dependency: Dependency): void;
  /** One per call that failed for the outage and was tried again. */
  retried(dependency: Dependency): void;
}

const noMeter: OutageMeter = { up: () => undefined, outage: () => undefined, retried: () => undefined };
let meter = noMeter;
const downSince = new Map<Dependency, number>();

export function setOutageMeter(m: OutageMeter): void {
  meter = m;
}

/** A call failed because `dependency` could not be reached. */
export function dependencyFailed(dependency: Dependency, err: unknown): void {
  if (downSince.has(dependency)) return;
  downSince.set(dependency, Date.now());
  meter.outage(dependency);
  meter.up(dependency, 0);
  logger.warn({ dependency, err: err instanceof Error ? err.message : String(err) }, 'dependency unavailable');
}

/** A call that had failed for `dependency` is tried again. */
export function dependencyRetried(dependency: Dependency): void {
  meter.retried(dependency);
}

/** A call to `dependency` succeeded: an outage this process saw has ended. */
export function dependencyAnswered(dependency: Dependency): void {
  const since = downSince.get(dependency);
  if (since === undefined) return;
  downSince.delete(dependency);
  meter.up(dependency, 1);
  logger.info({ dependency, outage_ms: Date.now() - since }, 'dependency available again');
}
