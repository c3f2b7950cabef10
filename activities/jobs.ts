import { ServiceError } from '../domain/errors';
import { mintId } from '../domain/ids';
import { ITEM_SCOPE, jobOutcome, type JobType } from '../domain/jobs';
import { creatorHolds } from '../domain/creators';
import type { RunInput, RunOutcome } from '../domain/runs';
import type { Scope } from '../domain/scopes';
import { releaseReservation } from '../db/creditReservations';
import { extractionById } from '../db/extractions';
import { cancelQueuedItems, itemDone, itemRunning, itemWithdrawn, itemsFrom, jobById, jobCounts, jobCreator, finishJobRecord, startJobRecord } from '../db/jobs';
import { ingestionById } from '../db/knowledgeIngestions';
import { createExtraction } from '../planning/extractions';
import { createIngestion } from '../planning/ingestions';
import { planRun } from '../planning/planRun';
import { parseExecutionRequest } from '../contract/runtimeInput';
import { heartbeating } from './bounded';

/** How often a joined ingestion is looked at. */
const JOINED_POLL_MS = 1_000;

export interface JobItem {
  seq: number;
  item: unknown;
}

/** The job's next items (from `fromSeq`, not yet done), and whether it was asked to stop. queued → running on the first call. */
export async function jobWindow(w: { jobId: string; fromSeq: number; limit: number }): Promise<{ cancelRequested: boolean; items: JobItem[] }> {
  const job = (await jobById(w.jobId))!;
  await startJobRecord(job.id);
  const rows = await itemsFrom(job.id, w.fromSeq, w.limit);
  return { cancelRequested: job.cancel_requested, items: rows.filter((r) => r.status === 'queued' || r.status === 'running').map((r) => ({ seq: r.seq, item: r.item })) };
}

/** What an item became: a workflow the job runs as its child, or a failure before anything started. */
export type StartedItem =
  | { kind: 'run'; run: RunInput }
  | { kind: 'ingestion'; ingestionId: string; joined: boolean }
  | { kind: 'extraction'; extractionId: string }
  | { kind: 'failed'; error: { code: string; message: string } };

// A job's runs are never previews: no scope that would allow one.
const ITEM_SCOPES: ReadonlySet<Scope> = new Set();

/**
 * Creates what an item stands for (planning and holding credits for a run, recording an ingestion or
 * an extraction) and marks it running with that resource's id. A refusal (the agent unavailable, no
 * credits, a missing document) fails the item, not the job.
 */
export async function startJobItem(s: { jobId: string; type: JobType; params: Record<string, unknown>; workspace: RunInput['workspace']; item: JobItem }): Promise<StartedItem> {
  const job = (await jobById(s.jobId))!;
  const ids = { requestId: job.request_id, traceId: job.trace_id };
  let started: StartedItem;
  try {
    await requireCreatorScope(job.id, s.type);
    if (s.type === 'runs.batch') {
      const request = parseExecutionRequest(s.item.item);
      const run = await planRun({ workspace: s.workspace, scopes: ITEM_SCOPES, ...ids }, request, { kind: 'agent_run', agentPublicId: String(s.params.agent) }, mintId('run'), () => undefined);
      started = { kind: 'run', run: { ...run, jobId: job.public_id } };
    } else if (s.type === 'knowledge.ingest') {
      const id = mintId('ingestion');
      const ingestion = await createIngestion({ id, workspaceId: s.workspace.id, document: String(s.item.item), collection: String(s.params.collection), ...ids });
      // The document may be being ingested into the collection already (by a request outside the job): the item joins that ingestion.
      started = { kind: 'ingestion', ingestionId: ingestion.public_id, joined: ingestion.public_id !== id };
    } else {
      const id = mintId('extraction');
      const { schema, agent, instructions } = s.params as { schema: Record<string, unknown>; agent?: string; instructions?: string };
      await createExtraction({ id, workspaceId: s.workspace.id, document: String(s.item.item), schema, agent, instructions, ...ids });
      started = { kind: 'extraction', extractionId: id };
    }
  } catch (err) {
    if (!(err instanceof ServiceError)) throw err;
    await itemDone(job.id, s.item.seq, 'failed', { code: err.code, message: err.message });
    return { kind: 'failed', error: { code: err.code, message: err.message } };
  }
  const resource = started.kind === 'run' ? started.run.runId : started.kind === 'ingestion' ? started.ingestionId : started.kind === 'extraction' ? started.extractionId : '';
  await itemRunning(job.id, s.item.seq, resource);
  return started;
}

/**
 * The job's creator still holds the scope of what its items do: a key revoked, expired or changed
 * since, or a member revoked or moved to a role without it, stops the job's unstarted items (each
 * fails permission_denied). Jobs created before creators were recorded name none and go on.
 */
async function requireCreatorScope(jobKey: number, type: JobType): Promise<void> {
  const scope = ITEM_SCOPE[type];
  if (!creatorHolds(await jobCreator(jobKey), scope)) throw new ServiceError('permission_denied', `The credential that created this job no longer holds "${scope}" (revoked, expired or changed): its remaining items do not run.`);
}

/** The item's outcome, from its run's outcome or its ingestion's or extraction's record. */
export async function finishJobItem(f: { jobId: string; seq: number; started: StartedItem; outcome?: RunOutcome; cancelled?: boolean; neverStarted?: boolean }): Promise<void> {
  const job = (await jobById(f.jobId))!;
  if (f.neverStarted) {
    // The job was cancelled between creating the item's resource and starting it: a planned run's
    // credit hold goes back now; a recorded ingestion or extraction simply never starts.
    if (f.started.kind === 'run') await releaseReservation(f.started.run.runId, 0);
    return itemWithdrawn(job.id, f.seq);
  }
  // A run the job's cancellation reached settles as cancelled (and returns): its item is cancelled too.
  if (f.cancelled || f.outcome?.run.status === 'cancelled') return itemDone(job.id, f.seq, 'cancelled', undefined);
  let error: { code: string; message: string } | null | undefined;
  if (f.started.kind === 'run') error = f.outcome ? (f.outcome.error ?? null) : { code: 'internal_error', message: 'The run did not finish.' };
  else {
    const record = f.started.kind === 'ingestion' ? await ingestionById(f.started.ingestionId) : f.started.kind === 'extraction' ? await extractionById(f.started.extractionId) : undefined;
    if (!record) error = { code: 'internal_error', message: 'The item did not finish.' };
    else error = record.status === 'completed' ? null : { code: record.error_code ?? 'internal_error', message: record.error_message ?? 'The item failed.' };
  }
  await itemDone(job.id, f.seq, error ? 'failed' : 'completed', error ?? undefined);
}

/** → completed, failed (some item failed) or cancelled (asked to stop: its items that never started are cancelled). */
export async function finishJob(f: { jobId: string }): Promise<void> {
  const job = (await jobById(f.jobId))!;
  if (job.cancel_requested) await cancelQueuedItems(job.id);
  await finishJobRecord(job.id, jobOutcome(await jobCounts(job.id), job.cancel_requested));
}

/** Waits for an ingestion the job did not start (one it joined) to end, heartbeating. */
export function awaitIngestion(ingestionId: string): Promise<void> {
  return heartbeating(async () => {
    for (;;) {
      const ingestion = await ingestionById(ingestionId);
      if (!ingestion || ingestion.status === 'completed' || ingestion.status === 'failed') return;
      await new Promise((r) => setTimeout(r, JOINED_POLL_MS));
    }
  });
}
