import { JOB_STATUSES, JOB_TYPES, MAX_JOB_ITEMS, RESOURCE_OF_TYPE, type JobType } from '../../../domain/jobs';
import { COLLECTION_NAME, COLLECTION_NAME_RULE } from '../../../domain/knowledge';
import { MAX_IDEMPOTENCY_KEY_LENGTH } from '../../middleware/idempotent';
import { MAX_ITEM_LIMIT, MAX_JOB_LIMIT } from '../../routes/jobs/schema';
import { IDEMPOTENCY_KEY, replayMarker, runtimeInput } from '../execution';
import { anyObject, boolean, closed, constant, failureRecord, integer, oneOfValues, orNull, publicId, ref, string, timestamp, type JsonSchema } from '../jsonSchema';
import { json, jsonBody, LOCATION, operation, pathParam, queryParam, type Resource } from '../operation';

const id = pathParam('id', publicId('job'));
const count = integer({ minimum: 0 });

/** Each type's items and params (api/routes/jobs/schema.ts). */
const TYPES: Record<JobType, { items: JsonSchema; params: JsonSchema }> = {
  'runs.batch': {
    items: runtimeInput('optional', 'A runtime input, as the body of POST /api/v2/agents/{agent_id}/runs, without `stream` and without `agent` (named once, in `params.agent`).'),
    params: closed({ agent: string({ minLength: 1, maxLength: 200 }) }),
  },
  'knowledge.ingest': {
    items: publicId('document'),
    params: closed({ collection: string({ pattern: COLLECTION_NAME.source, description: `${COLLECTION_NAME_RULE}.` }) }),
  },
  'extractions.batch': {
    items: publicId('document'),
    params: closed({ schema: anyObject('The JSON Schema of what to draw from each document.'), agent: string({ minLength: 1, maxLength: 200 }), instructions: string({ minLength: 1, maxLength: 4000 }) }, { required: ['schema'] }),
  },
};

const job = {
  id: publicId('job'),
  object: constant('job'),
  type: oneOfValues(JOB_TYPES),
  resource_type: oneOfValues([...new Set(Object.values(RESOURCE_OF_TYPE))], 'What each item becomes.'),
  status: oneOfValues(JOB_STATUSES),
  params: anyObject(),
  progress: closed({ total: count, queued: count, running: count, completed: count, failed: count, cancelled: count, done: count, percent: integer({ minimum: 0, maximum: 100 }) }),
  created_at: timestamp(),
  started_at: orNull(timestamp()),
  completed_at: orNull(timestamp()),
};
const cancelRequested = boolean({ description: 'Whether a cancel was asked for.' });

export const jobs: Resource = {
  schemas: {
    Job: closed(job),
    JobWithCancel: closed({ ...job, cancel_requested: cancelRequested }),
    JobWithItems: closed({
      ...job,
      cancel_requested: cancelRequested,
      items: closed({
        object: constant('list'),
        data: { type: 'array', items: closed({ seq: integer({ minimum: 0 }), status: oneOfValues(JOB_STATUSES), resource: orNull(string({ description: 'The run, ingestion or extraction the item became.' })), error: failureRecord() }) },
        has_more: boolean(),
      }),
    }),
  },
  paths: {
    '/api/v2/jobs': {
      post: operation('post', {
        id: 'createJob',
        summary: 'Create a job',
        description: 'Queues work over many items, each checked before anything is accepted (a 400 names the item: `items[3]: …`). The body\'s `idempotency_key` means what the header means; both given and different is a 400. Needs credit.',
        tag: 'Jobs',
        access: { credential: 'workspace', scopes: ['jobs:create'] },
        parameters: [IDEMPOTENCY_KEY],
        body: jsonBody({
          oneOf: JOB_TYPES.map((type) =>
            closed(
              {
                type: constant(type),
                items: { type: 'array', minItems: 1, maxItems: MAX_JOB_ITEMS, items: TYPES[type].items },
                params: TYPES[type].params,
                idempotency_key: string({ minLength: 1, maxLength: MAX_IDEMPOTENCY_KEY_LENGTH }),
              },
              { required: ['type', 'items', 'params'] },
            ),
          ),
        }),
        responses: { '202': json('Accepted: the job as it stands; poll `Location`.', ref('Job'), { ...LOCATION, ...replayMarker('Idempotent-Replay') }) },
        errors: ['usage_blocked', 'idempotency_conflict'],
      }),
      get: operation('get', {
        id: 'listJobs',
        summary: 'List jobs',
        description: 'The one v2 list paged by offset: no cursor, and a page taken while jobs are created can repeat or skip one.',
        tag: 'Jobs',
        access: { credential: 'workspace', scopes: ['jobs:read'] },
        parameters: [
          queryParam('status', oneOfValues(JOB_STATUSES), 'An unknown value is a 400.'),
          queryParam('type', oneOfValues(JOB_TYPES), 'The job (resource) type.'),
          queryParam('limit', { type: 'integer', minimum: 1, default: 20 }, `Clamped to ${MAX_JOB_LIMIT}.`),
          queryParam('offset', { type: 'integer', minimum: 0, default: 0 }, 'Rows to skip.'),
        ],
        responses: { '200': json('A page of jobs.', closed({ object: constant('list'), data: { type: 'array', items: ref('Job') }, has_more: boolean() })) },
      }),
    },
    '/api/v2/jobs/{id}': {
      get: operation('get', {
        id: 'getJob',
        summary: 'Read a job and a page of its items',
        tag: 'Jobs',
        access: { credential: 'workspace', scopes: ['jobs:read'] },
        parameters: [
          id,
          queryParam('items_limit', { type: 'integer', minimum: 1, default: 100 }, `Clamped to ${MAX_ITEM_LIMIT}.`),
          queryParam('items_offset', { type: 'integer', minimum: 0, default: 0 }),
        ],
        responses: { '200': json('The job.', ref('JobWithItems')) },
        errors: ['job_not_found'],
      }),
    },
    '/api/v2/jobs/{id}/cancel': {
      post: operation('post', {
        id: 'cancelJob',
        summary: 'Cancel a job',
        description: 'No body. Idempotent, finished jobs included: answered with the job as it stands. Items not yet started are cancelled; running runs are cancelled.',
        tag: 'Jobs',
        access: { credential: 'workspace', scopes: ['jobs:cancel'] },
        parameters: [id],
        responses: { '200': json('The job as it stands.', ref('JobWithCancel')) },
        errors: ['job_not_found'],
      }),
    },
  },
};
