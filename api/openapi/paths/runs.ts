import { RUN_READER_SCOPES } from '../../runs';
import { MAX_RUN_LIMIT, RUN_KINDS } from '../../routes/runs/schema';
import { cursorList, cursorParam, limitParam } from '../components';
import { RUN_STATUSES } from '../errors';
import { closed, integer, oneOfValues, orNull, publicId, ref, string, timestamp } from '../jsonSchema';
import { json, operation, pathParam, queryParam, type Resource } from '../operation';

const STATUS_LIST = `^(${RUN_STATUSES.join('|')})(,(${RUN_STATUSES.join('|')}))*$`;

const runId = pathParam('run_id', { type: 'string' }, 'The run id (`run_…`).');
const readers = { credential: 'workspace', scopes: RUN_READER_SCOPES } as const;
const WHO = 'A run is readable only with the scope that could have created it (`responses:create`, `agents:run`, `messages:create`, `reports:create` or `extractions:create` for its kind); otherwise it is the same 404 as a missing run.';

export const runs: Resource = {
  schemas: {
    RunSummary: closed(
      {
        id: publicId('run'),
        object: { type: 'string', const: 'run.summary' },
        status: oneOfValues(RUN_STATUSES),
        kind: oneOfValues(RUN_KINDS),
        agent: string(),
        agent_version: integer(),
        error_code: orNull(ref('ErrorCode')),
        total_tokens: integer({ minimum: 0 }),
        queued_ms: integer({ minimum: 0, description: 'How long it waited in the queue: until it started, or (never started) until it ended, or until now.' }),
        reconciled: { type: 'boolean', description: 'Settled by the reconciler: its workflow ended without settling it.' },
        created_at: timestamp(),
        started_at: orNull(timestamp()),
        completed_at: orNull(timestamp()),
      },
      { description: 'A run in a list: metadata only, never its exchange (read one run for its output).' },
    ),
  },
  paths: {
    '/api/v2/runs': {
      get: operation('get', {
        id: 'listRuns',
        summary: 'List runs (the ones that need attention)',
        description: 'The workspace\'s runs, newest first; `cursor` in, `next_cursor` out. Only the kinds the credential may read are listed: ' + WHO,
        tag: 'Runs',
        access: readers,
        parameters: [
          limitParam(MAX_RUN_LIMIT),
          cursorParam,
          queryParam('status', { type: 'string', pattern: STATUS_LIST }, 'One or more statuses, comma-separated (`failed,blocked`).'),
          queryParam('agent', publicId('agent')),
          queryParam('kind', oneOfValues(RUN_KINDS)),
          queryParam('created_after', { type: 'string', format: 'date-time' }, 'Created at or after this time.'),
          queryParam('created_before', { type: 'string', format: 'date-time' }, 'Created before this time.'),
          queryParam('queued_longer_than_ms', { type: 'integer', minimum: 0, maximum: 9999999999 }, 'Runs that waited in the queue longer than this.'),
          queryParam('reconciled', oneOfValues(['true', 'false']), 'Settled by the reconciler, or not.'),
        ],
        responses: { '200': json('A page of runs.', cursorList(ref('RunSummary'))) },
      }),
    },
    '/api/v2/runs/{run_id}': {
      get: operation('get', {
        id: 'getRun',
        summary: 'Read a run',
        description: `The run as it stands. Stateless /responses runs keep no copy of the exchange: their \`output\` is \`[]\` when read back. ${WHO}`,
        tag: 'Runs',
        access: readers,
        parameters: [runId],
        responses: { '200': json('The run.', ref('RunResponse')) },
        errors: ['run_not_found'],
      }),
    },
    '/api/v2/runs/{run_id}/events': {
      get: operation('get', {
        id: 'followRunEvents',
        summary: 'Follow a run\'s events',
        description: `Replays the run's events from the start (or after \`Last-Event-ID\`) and follows them to the one terminal event. Any API instance serves it. ${WHO}`,
        tag: 'Runs',
        access: readers,
        parameters: [runId, { name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string', pattern: '^\\d+-\\d+$' }, description: 'The last `id:` read: resume after it.' }],
        responses: {
          '200': { description: 'The run\'s events.', headers: { 'X-Stream-Version': { description: 'The stream contract version.', schema: { type: 'string' } } }, content: { 'text/event-stream': { schema: ref('ResponseStream') } } },
        },
        errors: ['run_not_found'],
      }),
    },
    '/api/v2/runs/{run_id}/cancel': {
      post: operation('post', {
        id: 'cancelRun',
        summary: 'Cancel a run',
        description: `Idempotent: a finished run is answered as it ended. A running run settles once as \`cancelled\` (billed for what it used); the answer waits for that up to 5 seconds. ${WHO}`,
        tag: 'Runs',
        access: readers,
        parameters: [runId],
        responses: { '200': json('The run as it stands.', ref('RunResponse')) },
        errors: ['run_not_found'],
      }),
    },
  },
};
