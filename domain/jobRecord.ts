import { JOB_STATUSES, JOB_TYPES, RESOURCE_OF_TYPE, type ItemStatus, type JobCounts, type JobFields } from './jobs';
import { boolean, closed, constant, failureRecord, freeObject, integer, offsetPage, oneOfValues, orNull, publicId, ref, text, timestamp, type Static } from './shape';

/**
 * The job as the API shows it, declared once for its view and the OpenAPI document. Apart from
 * domain/jobs.ts, which the job workflow imports: the workflow bundle takes neither TypeBox nor
 * the ids' node:crypto.
 */

const count = integer({ minimum: 0 });

const jobFields = {
  id: publicId('job'),
  object: constant('job'),
  type: oneOfValues(JOB_TYPES),
  resource_type: oneOfValues([...new Set(Object.values(RESOURCE_OF_TYPE))], 'What each item becomes.'),
  status: oneOfValues(JOB_STATUSES),
  params: freeObject(),
  progress: closed({ total: count, queued: count, running: count, completed: count, failed: count, cancelled: count, done: count, percent: integer({ minimum: 0, maximum: 100 }) }),
  created_at: timestamp(),
  started_at: orNull(timestamp()),
  completed_at: orNull(timestamp()),
};

/** The public job record: its shape, declared once for the view and the OpenAPI document. */
export const Job = closed(jobFields);

/** The record: its progress counts whatever page of its items is shown. */
export function jobObject(row: JobFields, counts: JobCounts): Static<typeof Job> {
  const done = counts.completed + counts.failed + counts.cancelled;
  return {
    id: row.public_id,
    object: 'job',
    type: row.type,
    resource_type: RESOURCE_OF_TYPE[row.type],
    status: row.status,
    params: row.params,
    progress: { total: row.items_total, ...counts, done, percent: row.items_total ? Math.floor((done / row.items_total) * 100) : 100 },
    created_at: row.created_at.toISOString(),
    started_at: row.started_at?.toISOString() ?? null,
    completed_at: row.completed_at?.toISOString() ?? null,
  };
}

export const JobList = offsetPage(ref<Static<typeof Job>>('Job'));

export function jobList(jobs: Static<typeof Job>[], hasMore: boolean): Static<typeof JobList> {
  return { object: 'list', data: jobs, has_more: hasMore };
}

const cancelRequested = boolean('Whether a cancel was asked for.');

/** The record as a cancel answers it. */
export const JobWithCancel = closed({ ...jobFields, cancel_requested: cancelRequested });

export function jobWithCancel(row: JobFields & { cancel_requested: boolean }, counts: JobCounts): Static<typeof JobWithCancel> {
  return { ...jobObject(row, counts), cancel_requested: row.cancel_requested };
}

export interface JobItemFields {
  seq: number;
  status: ItemStatus;
  resource_id: string | null;
  error_code: string | null;
  error_message: string | null;
}

const JobItem = closed({ seq: integer({ minimum: 0 }), status: oneOfValues(JOB_STATUSES), resource: orNull(text('The run, ingestion or extraction the item became.')), error: failureRecord() });

/** The record as a read answers it, with a page of its items. */
export const JobWithItems = closed({ ...jobFields, cancel_requested: cancelRequested, items: offsetPage(JobItem) });

/** The job with `limit` of its items, from up to `limit + 1` of them. */
export function jobWithItems(row: JobFields & { cancel_requested: boolean }, counts: JobCounts, items: JobItemFields[], limit: number): Static<typeof JobWithItems> {
  return {
    ...jobWithCancel(row, counts),
    items: {
      object: 'list',
      data: items.slice(0, limit).map((i) => ({ seq: i.seq, status: i.status, resource: i.resource_id, error: i.error_code ? { code: i.error_code, message: i.error_message } : null })),
      has_more: items.length > limit,
    },
  };
}

