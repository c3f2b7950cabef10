/**
 * What the Temporal server did during a phase, counted from its own Prometheus counters: requests each
 * of its services served, persistence operations (a write of a workflow's state is
 * `UpdateWorkflowExecution`), history tasks it processed and the actions Temporal Cloud would bill, each by operation. Divided by the runs of
 * the phase, they say where Temporal's CPU per run goes. The timeouts it enforced (by the timer task
 * that found them) say what waited too long: a model call's heartbeat timeout retries it, a sticky
 * workflow task's schedule-to-start timeout moves it to the shared queue.
 */
const COUNTERS = ['service_requests', 'persistence_requests', 'task_requests', 'action'];
const TIMEOUTS = ['schedule_to_start_timeout', 'start_to_close_timeout', 'schedule_to_close_timeout', 'heartbeat_timeout'];

export type TemporalCounts = Map<string, number>;

/** The counters, summed over every label but `operation` (and the service, for requests): `service_requests frontend RecordActivityTaskHeartbeat`. */
export async function temporalCounts(metricsUrl: string): Promise<TemporalCounts> {
  const text = await (await fetch(metricsUrl)).text();
  const counts: TemporalCounts = new Map();
  for (const line of text.split('\n')) {
    const m = /^(\w+)\{(.*)\} ([\d.e+]+)$/.exec(line);
    if (!m || !(COUNTERS.includes(m[1]) || TIMEOUTS.includes(m[1]))) continue;
    const label = (name: string) => new RegExp(`(?:^|,)${name}="([^"]*)"`).exec(m[2])?.[1];
    const key = [m[1], m[1] === 'service_requests' ? label('service_name') : undefined, label('operation')].filter(Boolean).join(' ');
    counts.set(key, (counts.get(key) ?? 0) + Number(m[3]));
  }
  return counts;
}

/** Each counter's growth from `before` to `after` per run, largest first, those under `min` per run left out (but any timeout). */
export function perRun(before: TemporalCounts, after: TemporalCounts, runs: number, min = 0.05): Record<string, number> {
  return Object.fromEntries(
    [...after]
      .map(([key, n]) => [key, (n - (before.get(key) ?? 0)) / runs] as const)
      .filter(([key, n]) => n >= min || (n > 0 && TIMEOUTS.includes(key.split(' ')[0])))
      .sort((a, b) => b[1] - a[1])
      .map(([key, n]) => [key, Math.round(n * 1000) / 1000]),
  );
}
