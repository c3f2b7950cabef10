import type { Scope } from './scopes';

/** Jobs: queued work over many items, each item a run, an ingestion or an extraction. */

export const JOB_TYPES = ['runs.batch', 'knowledge.ingest', 'extractions.batch'] as const;
export type JobType = (typeof JOB_TYPES)[number];
export const JOB_STATUSES = ['queued', 'running', 'completed', 'failed', 'cancelled'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
export type ItemStatus = JobStatus;

/** Items one job may have. */
export const MAX_JOB_ITEMS = 10_000;
/** Items in flight at once, per job. */
export const JOB_CONCURRENCY = 16;
/**
 * Items one workflow execution takes before it continues as new: each item adds about 14 events
 * (its preparation, its child workflow, its outcome), so an execution's history stays under 3,500
 * events (2,700-2,750 measured) however many items the job has.
 */
export const ITEMS_PER_EXECUTION = 200;

/**
 * The scope of the operation each item performs: a job's creator needs it besides jobs:create, and
 * still holds it when each item starts (scopes never imply one another).
 */
export const ITEM_SCOPE: Record<JobType, Scope> = {
  'runs.batch': 'agents:run',
  'knowledge.ingest': 'knowledge:write',
  'extractions.batch': 'extractions:create',
};

/** What each item of a job becomes. */
export const RESOURCE_OF_TYPE: Record<JobType, 'run' | 'knowledge_ingestion' | 'extraction'> = {
  'runs.batch': 'run',
  'knowledge.ingest': 'knowledge_ingestion',
  'extractions.batch': 'extraction',
};

export interface JobCounts {
  queued: number;
  running: number;
  completed: number;
  failed: number;
  cancelled: number;
}

export interface JobFields {
  public_id: string;
  type: JobType;
  params: Record<string, unknown>;
  status: JobStatus;
  items_total: number;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
}

/** How a job ends once no item is left to run: cancelled if asked, failed if any item failed, else completed. */
export function jobOutcome(counts: JobCounts, cancelRequested: boolean): JobStatus {
  if (cancelRequested) return 'cancelled';
  return counts.failed > 0 ? 'failed' : 'completed';
}
