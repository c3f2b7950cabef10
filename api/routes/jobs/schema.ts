import * as yup from 'yup';
import { invalidRequest } from '../../../domain/errors';
import { isPublicId } from '../../../domain/ids';
import { JOB_STATUSES, JOB_TYPES, MAX_JOB_ITEMS, type JobType } from '../../../domain/jobs';
import { COLLECTION_NAME, COLLECTION_NAME_RULE } from '../../../domain/knowledge';
import { schemaProblem } from '../../../domain/structuredOutput';
import { IDEMPOTENCY_HEADERS, MAX_IDEMPOTENCY_KEY_LENGTH } from '../../middleware/idempotent';
import { validated } from '../../middleware/validate';
import { idParam, oneOfFilter, once } from '../../validation/listQuery';
import { parseExecutionRequest } from '../../validation/runtimeInput';

/** Larger list requests are clamped to this; item pages to MAX_ITEM_LIMIT. */
export const MAX_JOB_LIMIT = 100;
export const MAX_ITEM_LIMIT = 1000;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

const createJob = yup
  .object({
    type: yup.string().required('type is required').oneOf(JOB_TYPES, `type must be one of ${JOB_TYPES.join(', ')}`),
    items: yup.array().required('items is required').min(1, 'items must not be empty').max(MAX_JOB_ITEMS, `items must have at most ${MAX_JOB_ITEMS} entries`),
    params: yup.mixed<Record<string, unknown>>().test('params', 'params must be an object', (v) => v === undefined || isObject(v)),
    idempotency_key: yup.string().min(1).max(MAX_IDEMPOTENCY_KEY_LENGTH, `idempotency_key must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`),
  })
  .noUnknown(true, 'unknown key: ${unknown}')
  .strict();

const params = {
  'runs.batch': yup.object({ agent: yup.string().required('params.agent is required').max(200) }),
  'knowledge.ingest': yup.object({ collection: yup.string().required('params.collection is required').matches(COLLECTION_NAME, `params.collection: ${COLLECTION_NAME_RULE}`) }),
  'extractions.batch': yup.object({
    schema: yup.mixed<Record<string, unknown>>().required('params.schema is required').test('schema', 'params.schema must be an object', isObject),
    agent: yup.string().max(200),
    instructions: yup.string().min(1).max(4000),
  }),
} satisfies Record<JobType, yup.AnyObjectSchema>;

export interface JobRequest {
  type: JobType;
  items: unknown[];
  params: Record<string, unknown>;
  idempotencyKey?: string;
}

/** Each item of its type, checked now: a job is accepted only when every item could start. */
function checkItem(type: JobType, item: unknown, at: number): unknown {
  if (type !== 'runs.batch') {
    if (typeof item !== 'string' || !isPublicId('document', item)) throw invalidRequest(`items[${at}] must be a document id (doc_…).`);
    return item;
  }
  try {
    const request = parseExecutionRequest(item);
    if (request.options.stream) throw invalidRequest('stream is not available in a job; follow each run with GET /api/v2/runs/{id}/events.');
    if (request.agent !== undefined) throw invalidRequest('the agent is named once, in params.agent.');
  } catch (err) {
    throw invalidRequest(`items[${at}]: ${(err as Error).message}`);
  }
  return item;
}

/**
 * POST /api/v2/jobs: a publicly creatable `type`, its `items` and `params`, each checked for the type
 * (an unknown type lists the allowed ones). `idempotency_key` in the body means what the header
 * means; both given and different is a 400.
 */
export const CreateJob = {
  body: (value: unknown): JobRequest => {
    const body = validated(createJob, value);
    const type = body.type as JobType;
    const schema = (params[type] as yup.AnyObjectSchema).noUnknown(true, 'params has an unknown key: ${unknown}').strict();
    const checked = validated<Record<string, unknown>>(schema, body.params ?? {});
    const problem = type === 'extractions.batch' && schemaProblem(checked.schema as Record<string, unknown>);
    if (problem) throw invalidRequest(`params.schema: ${problem}`);
    return { type, items: body.items.map((item, i) => checkItem(type, item, i)), params: checked, idempotencyKey: body.idempotency_key };
  },
  headers: IDEMPOTENCY_HEADERS,
};

/** The body's idempotency_key and the header name one key, or the request is refused. */
export function sameIdempotencyKey(input: { body: JobRequest; headers: { 'idempotency-key'?: string } }): void {
  const header = input.headers['idempotency-key'];
  if (header !== undefined && input.body.idempotencyKey !== undefined && header !== input.body.idempotencyKey) {
    throw invalidRequest('The Idempotency-Key header and the body\'s idempotency_key differ; send one key, or the same in both.');
  }
}

const offsetParam = (name: string) => once(name).test(name, `${name} must be a non-negative integer.`, (v) => v === undefined || /^[0-9]+$/.test(v));
const limitParam = (name: string) => once(name).test(name, `${name} must be a positive integer.`, (v) => v === undefined || (/^[0-9]+$/.test(v) && Number(v) >= 1));

/** GET /api/v2/jobs: `status` (unknown value is 400), `type` (the resource type filter), `limit` (clamped), `offset`. */
export const ListJobs = {
  query: (value: unknown) => {
    const q = validated(
      yup
        .object({ status: oneOfFilter('status', JOB_STATUSES), type: oneOfFilter('type', JOB_TYPES), limit: limitParam('limit'), offset: offsetParam('offset') })
        .noUnknown(true, 'unknown query parameter: ${unknown}')
        .strict(),
      value,
    ) as { status?: string; type?: string; limit?: string; offset?: string };
    return { status: q.status, type: q.type, limit: Math.min(Number(q.limit ?? 20), MAX_JOB_LIMIT), offset: Number(q.offset ?? 0) };
  },
};

/** GET /api/v2/jobs/{id}: the job, and a page of its items (`items_offset`, `items_limit`, clamped). */
export const ReadJob = {
  params: idParam('job', 'a job id (job_…)'),
  query: (value: unknown) => {
    const q = validated(
      yup.object({ items_limit: limitParam('items_limit'), items_offset: offsetParam('items_offset') }).noUnknown(true, 'unknown query parameter: ${unknown}').strict(),
      value,
    ) as { items_limit?: string; items_offset?: string };
    return { itemsLimit: Math.min(Number(q.items_limit ?? 100), MAX_ITEM_LIMIT), itemsOffset: Number(q.items_offset ?? 0) };
  },
};

export const CancelJob = { params: idParam('job', 'a job id (job_…)') };
