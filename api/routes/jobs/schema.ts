import * as yup from 'yup';
import { invalidRequest } from '../../../domain/errors';
import { isPublicId, publicIdPattern } from '../../../domain/ids';
import { JOB_STATUSES, JOB_TYPES, MAX_JOB_ITEMS, type JobType } from '../../../domain/jobs';
import { COLLECTION_NAME, COLLECTION_NAME_RULE } from '../../../domain/knowledge';
import { schemaProblem } from '../../../domain/structuredOutput';
import { IDEMPOTENCY_HEADERS, MAX_IDEMPOTENCY_KEY_LENGTH } from '../../middleware/idempotent';
import { refined, validated } from '../../../contract/parse';
import { about, described } from '../../../contract/about';
import { idParam, offsetParam, oneOfFilter, positiveParam } from '../../../contract/listQuery';
import { checkRunAhead, ExecutionBody, plainObject } from '../../../contract/runtimeInput';
import { structuredSchema } from '../../../contract/structuredSchema';

/** Larger list requests are clamped to this; item pages to MAX_ITEM_LIMIT. */
export const MAX_JOB_LIMIT = 100;
export const MAX_ITEM_LIMIT = 1000;

const closedParams = <S extends yup.AnyObjectSchema>(schema: S) => schema.noUnknown(true, 'params has an unknown key: ${unknown}').strict();

/** Each type's params, checked once the type is known; unknown keys are refused. */
const params: Record<JobType, yup.AnyObjectSchema> = {
  'runs.batch': closedParams(yup.object({ agent: yup.string().required('params.agent is required').max(200) })),
  'knowledge.ingest': closedParams(
    yup.object({
      collection: yup.string().required('params.collection is required').matches(COLLECTION_NAME, `params.collection: ${COLLECTION_NAME_RULE}`).meta(about(`${COLLECTION_NAME_RULE}.`)),
    }),
  ),
  'extractions.batch': closedParams(
    yup.object({
      schema: structuredSchema('params.schema must be an object').required('params.schema is required'),
      agent: yup.string().max(200),
      instructions: yup.string().min(1).max(4000),
    }),
  ),
};

const fields = {
  type: yup.string().required('type is required').oneOf(JOB_TYPES, `type must be one of ${JOB_TYPES.join(', ')}`),
  items: yup.array().required('items is required').min(1, 'items must not be empty').max(MAX_JOB_ITEMS, `items must have at most ${MAX_JOB_ITEMS} entries`),
  params: plainObject({ description: 'What the type needs (its agent, collection or schema).' }),
  idempotency_key: yup
    .string()
    .min(1)
    .max(MAX_IDEMPOTENCY_KEY_LENGTH, `idempotency_key must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`)
    .meta(about('Means what the Idempotency-Key header means; both given and different is a 400.')),
};

/**
 * What checkItem() accepts of each type's items, for the document only (checkItem() checks them, and
 * names the item in its 400).
 */
const ITEMS: Record<JobType, yup.Schema> = {
  'runs.batch': described(
    fields.items.of(ExecutionBody.schema as yup.AnyObjectSchema),
    'Runtime inputs, each as the body of POST /api/v2/agents/{agent_id}/runs, without `stream` and without `agent` (named once, in `params.agent`).',
  ),
  'knowledge.ingest': fields.items.of(yup.string().matches(new RegExp(publicIdPattern('document')))),
  'extractions.batch': fields.items.of(yup.string().matches(new RegExp(publicIdPattern('document')))),
};

/** The body as documented: one closed object per type, with its own items and params (the rules CreateJob.body's read() applies). */
const jobOfType = (type: JobType) =>
  yup
    .object({ type: yup.string().required().oneOf([type]), items: ITEMS[type], params: params[type].required(), idempotency_key: fields.idempotency_key })
    .noUnknown()
    .strict();

const createJob = yup
  .object(fields)
  .noUnknown(true, 'unknown key: ${unknown}')
  .strict()
  .meta({ oneOf: JOB_TYPES.map(jobOfType) });

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
  checkRunAhead(item, { at: `items[${at}]`, within: 'in a job', agentIn: 'params.agent' });
  return item;
}

/**
 * POST /api/v2/jobs: a publicly creatable `type`, its `items` and `params`, each checked for the type
 * (an unknown type lists the allowed ones). `idempotency_key` in the body means what the header
 * means; both given and different is a 400.
 */
export const CreateJob = {
  body: refined(createJob, (body): JobRequest => {
    const type = body.type as JobType;
    const checked = validated<Record<string, unknown>>(params[type], body.params ?? {});
    const problem = type === 'extractions.batch' && schemaProblem(checked.schema as Record<string, unknown>);
    if (problem) throw invalidRequest(`params.schema: ${problem}`);
    return { type, items: body.items.map((item, i) => checkItem(type, item, i)), params: checked, idempotencyKey: body.idempotency_key };
  }),
  headers: IDEMPOTENCY_HEADERS,
};

/** The body's idempotency_key and the header name one key, or the request is refused. */
export function sameIdempotencyKey(input: { body: JobRequest; headers: { 'idempotency-key'?: string } }): void {
  const header = input.headers['idempotency-key'];
  if (header !== undefined && input.body.idempotencyKey !== undefined && header !== input.body.idempotencyKey) {
    throw invalidRequest('The Idempotency-Key header and the body\'s idempotency_key differ; send one key, or the same in both.');
  }
}

/** GET /api/v2/jobs: `status` (unknown value is 400), `type` (the resource type filter), `limit` (clamped), `offset`. */
export const ListJobs = {
  query: refined(
    yup
      .object({
        status: oneOfFilter('status', JOB_STATUSES),
        type: described(oneOfFilter('type', JOB_TYPES), 'The job (resource) type.'),
        limit: positiveParam('limit', 20, MAX_JOB_LIMIT),
        offset: described(offsetParam('offset'), 'Rows to skip.'),
      })
      .noUnknown(true, 'unknown query parameter: ${unknown}')
      .strict(),
    (q) => ({ status: q.status, type: q.type, limit: Math.min(Number(q.limit ?? 20), MAX_JOB_LIMIT), offset: Number(q.offset ?? 0) }),
  ),
};

/** GET /api/v2/jobs/{id}: the job, and a page of its items (`items_offset`, `items_limit`, clamped). */
export const ReadJob = {
  params: idParam('job', 'a job id (job_…)'),
  query: refined(
    yup
      .object({ items_limit: positiveParam('items_limit', 100, MAX_ITEM_LIMIT), items_offset: offsetParam('items_offset') })
      .noUnknown(true, 'unknown query parameter: ${unknown}')
      .strict(),
    (q) => ({ itemsLimit: Math.min(Number(q.items_limit ?? 100), MAX_ITEM_LIMIT), itemsOffset: Number(q.items_offset ?? 0) }),
  ),
};

export const CancelJob = { params: idParam('job', 'a job id (job_…)') };
