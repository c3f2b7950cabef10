import { CancellationScope, continueAsNew, executeChild, isCancellation, type RetryPolicy } from '@temporalio/workflow';
import type { JobInput } from '../workflowClients/job.client';
import type { JobItem, StartedItem } from '../activities/jobs';
import { ITEMS_PER_EXECUTION, JOB_CONCURRENCY } from '../domain/jobs';
import type { RunOutcome } from '../domain/runs';
import { agentRun } from './agentRun';
import { runStartOptions } from '../workflowClients/agentRun.options';
import { extraction } from './extraction';
import { knowledgeIngestion } from './knowledgeIngestion';
import { QUEUES, SEARCH_ATTRIBUTES } from '../workflowClients/registry';
import { namedActivities } from './namedActivities';

/** Bookkeeping and item creation in PostgreSQL: short and idempotent, retried until it succeeds. */
const BOOKKEEPING_RETRY: RetryPolicy = { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' };
const { jobWindow, startJobItem, finishJobItem, finishJob } = namedActivities(
  { startToCloseTimeout: '30s', retry: BOOKKEEPING_RETRY },
  { jobWindow: 'read the next items', startJobItem: 'start an item', finishJobItem: 'record an item\'s outcome', finishJob: 'settle the job' },
);
/** Waiting for an ingestion the job joined (not its child): as long as an ingestion may take, heartbeating. */
const { awaitIngestion } = namedActivities({ startToCloseTimeout: '1h', heartbeatTimeout: '30s', retry: BOOKKEEPING_RETRY }, { awaitIngestion: 'wait for the joined ingestion' });

const background = (workspace: string, kind: string) => ({
  taskQueue: QUEUES.background,
  typedSearchAttributes: [
    { key: SEARCH_ATTRIBUTES.workspaceId, value: workspace },
    { key: SEARCH_ATTRIBUTES.kind, value: kind },
  ],
});

/**
 * One item as a child workflow (or, for an ingestion already in flight that the item joined, waiting
 * for it). A cancelled job cancels its running runs (each settles once, as cancelled, billed for what
 * it used); a running ingestion or extraction is short and is let finish.
 */
async function runChild(input: JobInput, started: StartedItem): Promise<RunOutcome | undefined> {
  if (started.kind === 'run') return executeChild(agentRun, runStartOptions(started.run));
  const ws = input.workspace.publicId;
  if (started.kind === 'ingestion' && started.joined) {
    await CancellationScope.nonCancellable(() => awaitIngestion(started.ingestionId));
  } else if (started.kind === 'ingestion') {
    await CancellationScope.nonCancellable(() =>
      executeChild(knowledgeIngestion, { ...background(ws, 'knowledge_ingestion'), workflowId: started.ingestionId, args: [{ ingestionId: started.ingestionId, workspaceId: ws }] }),
    );
  } else if (started.kind === 'extraction') {
    await CancellationScope.nonCancellable(() =>
      executeChild(extraction, { ...background(ws, 'extraction'), workflowId: started.extractionId, args: [{ extractionId: started.extractionId, workspace: input.workspace }] }),
    );
  }
  return undefined;
}

/**
 * One item, recorded whatever happens: an item the job's cancellation reaches before it starts stays
 * queued (and is cancelled when the job ends); one being created is let finish creating, then
 * withdrawn without starting (a run's credit hold given back); a running run is cancelled and
 * recorded as it settled.
 */
async function runItem(input: JobInput, item: JobItem): Promise<void> {
  if (CancellationScope.current().consideredCancelled) return;
  const started = await CancellationScope.nonCancellable(() => startJobItem({ jobId: input.jobId, type: input.type, params: input.params, workspace: input.workspace, item }));
  if (started.kind === 'failed') return;
  const finish = (f: { outcome?: RunOutcome; cancelled?: boolean; neverStarted?: boolean }) =>
    CancellationScope.nonCancellable(() => finishJobItem({ jobId: input.jobId, seq: item.seq, started, ...f }));
  if (CancellationScope.current().consideredCancelled) return finish({ neverStarted: true });
  let outcome: RunOutcome | undefined;
  try {
    outcome = await runChild(input, started);
  } catch (err) {
    return finish(isCancellation(err) || CancellationScope.current().consideredCancelled ? { cancelled: true } : {});
  }
  await finish({ outcome });
}

/** Runs `work` over the items with at most `limit` in flight. */
async function pool<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  const running = new Set<Promise<void>>();
  for (const item of items) {
    if (CancellationScope.current().consideredCancelled) break;
    const p: Promise<void> = work(item).finally(() => running.delete(p));
    running.add(p);
    if (running.size >= limit) await Promise.race(running);
  }
  await Promise.all(running);
}

/**
 * A job: queued → running, its items a window at a time, JOB_CONCURRENCY in flight, each a child
 * workflow whose outcome is recorded; continued as new every ITEMS_PER_EXECUTION items so no history
 * grows with the job. Ends completed, failed (some item failed; each item's error is on its record)
 * or cancelled (asked to stop: unstarted items are cancelled, running runs cancelled).
 */
export async function job(input: JobInput): Promise<void> {
  let fromSeq = input.fromSeq;
  let taken = 0;
  try {
    for (;;) {
      const window = await jobWindow({ jobId: input.jobId, fromSeq, limit: ITEMS_PER_EXECUTION - taken });
      if (window.cancelRequested || window.items.length === 0) break;
      await pool(window.items, JOB_CONCURRENCY, (item) => runItem(input, item));
      if (CancellationScope.current().consideredCancelled) break;
      fromSeq = window.items[window.items.length - 1].seq + 1;
      taken += window.items.length;
      if (taken >= ITEMS_PER_EXECUTION) return await continueAsNew<typeof job>({ ...input, fromSeq });
    }
  } catch (err) {
    if (!isCancellation(err)) throw err;
  }
  await CancellationScope.nonCancellable(() => finishJob({ jobId: input.jobId }));
}
