import { RUN_READER_SCOPES } from '../../runs';
import { ref } from '../jsonSchema';
import { json, operation, pathParam, type Resource } from '../operation';

const runId = pathParam('run_id', { type: 'string' }, 'The run id (`run_…`).');
const readers = { credential: 'workspace', scopes: RUN_READER_SCOPES } as const;
const WHO = 'A run is readable only with the scope that could have created it (`responses:create`, `agents:run`, `messages:create`, `reports:create` or `extractions:create` for its kind); otherwise it is the same 404 as a missing run.';

export const runs: Resource = {
  paths: {
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
