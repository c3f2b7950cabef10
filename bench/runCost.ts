import { setTimeout as delay } from 'node:timers/promises';
import { temporal } from '../infra/temporalClient';
import type { Summary } from './load';
import type { Stack } from './stack';
import { perRun, temporalCounts } from './temporalCounters';

/**
 * What one run asks of each part, against what one floor workflow asks (issue 61: where a run's cost
 * goes), measured over a phase: Temporal's work from its own counters, the history of one of the
 * phase's workflows, and each process's CPU, all divided by the requests the phase served.
 */
export interface RunCost {
  /** Workflow tasks completed (the frontend's RespondWorkflowTaskCompleted). */
  workflow_tasks: number;
  /** Activity tasks completed, failed or cancelled (eager ones included: they still report). */
  activity_tasks: number;
  /** Events in one workflow's history. */
  history_events: number;
  /** Writes Temporal made to its store: workflow state, history, visibility, task bookkeeping. */
  persistence_writes: number;
  /** Timer tasks the history service ran (timeouts it checked). */
  timers: number;
  /** What Temporal Cloud bills and limits a namespace by (its `action` counter): a namespace's actions per second over this is its runs per second. */
  actions: number;
  /** CPU per request, ms, by process group. */
  cpu_ms: Record<string, number>;
  /** Every Temporal counter per request, by operation (bench/temporalCounters.ts). */
  temporal: Record<string, number>;
}

const WRITES = /^persistence_requests (Create|Update|Append|Upsert|Record|Delete|Complete|RangeComplete|Put|ConflictResolve|Set)/;
const sum = (counts: Record<string, number>, matches: (key: string) => boolean) =>
  Math.round(Object.entries(counts).reduce((total, [key, n]) => total + (matches(key) ? n : 0), 0) * 100) / 100;

/** Events in the history of the newest closed workflow of this type. */
async function historyEvents(workflowType: string): Promise<number> {
  const client = await temporal();
  for await (const execution of client.workflow.list({ query: `WorkflowType = '${workflowType}' AND ExecutionStatus = 'Completed'`, pageSize: 1 })) {
    const history = await client.workflow.getHandle(execution.workflowId, execution.runId).fetchHistory();
    return history.events?.length ?? 0;
  }
  return 0;
}

/**
 * A run is answered at its settlement, before its workflow's last task: the last requests' workflows
 * close after the phase. Counted with it, so the per-request figures hold for a short phase too.
 */
const TAIL_MS = 2000;

/** What one window's requests cost each part: a RunCost less the history, which mergedCost reads once. */
export type WindowCost = Omit<RunCost, 'history_events'>;

/** Runs the phase (a window) and says what each of its requests cost. */
export async function withRunCost<T extends Pick<Summary, 'served'>>(s: Stack, phase: () => Promise<T>): Promise<{ summary: T; cost: WindowCost }> {
  const before = await temporalCounts(s.temporalMetrics);
  const { result, usage } = await s.sampler.during(async () => {
    const summary = await phase();
    await delay(TAIL_MS);
    return summary;
  });
  const temporalPerRequest = perRun(before, await temporalCounts(s.temporalMetrics), result.served, 0.01);
  const cpu = Object.fromEntries(Object.entries(usage.cpuMs).map(([name, ms]) => [name, Math.round((ms / result.served) * 100) / 100]));
  return {
    summary: result,
    cost: {
      workflow_tasks: sum(temporalPerRequest, (key) => key === 'service_requests frontend RespondWorkflowTaskCompleted'),
      activity_tasks: sum(temporalPerRequest, (key) => /^service_requests frontend RespondActivityTask(Completed|Failed|Canceled)$/.test(key)),
      persistence_writes: sum(temporalPerRequest, (key) => WRITES.test(key)),
      timers: sum(temporalPerRequest, (key) => key.startsWith('task_requests Timer')),
      actions: sum(temporalPerRequest, (key) => key === 'action' || key.startsWith('action ')),
      cpu_ms: cpu,
      temporal: temporalPerRequest,
    },
  };
}

const weighted = (parts: { served: number; value: number }[]) => {
  const served = parts.reduce((n, p) => n + p.served, 0);
  return served === 0 ? 0 : Math.round((parts.reduce((sum, p) => sum + p.value * p.served, 0) / served) * 100) / 100;
};

/**
 * One kind of request's cost measured over several windows, as one: each figure weighted by the
 * requests its window served, and the history of one of its workflows (`workflowType`) read once.
 */
export async function mergedCost(workflowType: string, parts: { summary: Pick<Summary, 'served'>; cost: WindowCost }[]): Promise<RunCost> {
  const field = (pick: (c: WindowCost) => number | undefined) => weighted(parts.map((p) => ({ served: p.summary.served, value: pick(p.cost) ?? 0 })));
  const record = (pick: (c: WindowCost) => Record<string, number>) =>
    Object.fromEntries([...new Set(parts.flatMap((p) => Object.keys(pick(p.cost))))].map((key) => [key, field((c) => pick(c)[key])]));
  return {
    workflow_tasks: field((c) => c.workflow_tasks),
    activity_tasks: field((c) => c.activity_tasks),
    history_events: await historyEvents(workflowType),
    persistence_writes: field((c) => c.persistence_writes),
    timers: field((c) => c.timers),
    actions: field((c) => c.actions),
    cpu_ms: record((c) => c.cpu_ms),
    temporal: record((c) => c.temporal),
  };
}
