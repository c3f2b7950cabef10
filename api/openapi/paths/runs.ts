import { APPROVER_SCOPE, RUN_READER_SCOPES } from '../../../runs/asItStands';
import { AnswerAction, CancelRun, FollowRunEvents, ListRuns, ReadRun } from '../../routes/runs/schema';
import { ACTION_TYPES } from '../../../domain/actionTypes';
import { RunSummary } from '../../../domain/runSummary';
import { cursorList } from '../components';
import { closed, constant, oneOfValues, orNull, publicId, ref, string, timestamp } from '../jsonSchema';
import { json, operation, type Resource } from '../operation';

const readers = { credential: 'workspace', scopes: RUN_READER_SCOPES } as const;
/** Reading a run and answering its calls: an approver (`actions:approve`) too. */
const readersAndApprovers = { credential: 'workspace', scopes: [...RUN_READER_SCOPES, APPROVER_SCOPE] } as const;
const WHO = 'A run is readable only with the scope that could have created it (`responses:create`, `agents:run`, `messages:create`, `reports:create` or `extractions:create` for its kind); otherwise it is the same 404 as a missing run.';

export const runs: Resource = {
  schemas: {
    RunSummary,
    RunAction: closed(
      {
        object: constant('run.action'),
        run: publicId('run'),
        call_id: string(),
        type: oneOfValues(ACTION_TYPES),
        tool: string(),
        status: oneOfValues(['approved', 'denied', 'answered'], 'What became of the call: approved (the service makes it), denied (the model is told), answered (the client tool\'s output went to the model).'),
        reason: string({ description: 'The reason given with the decision.' }),
        answered_at: orNull(timestamp()),
      },
      { optional: ['reason'], description: 'A call the run waited on, as its (first) answer left it.' },
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
        request: ListRuns,
        responses: { '200': json('A page of runs.', cursorList(ref('RunSummary'))) },
      }),
    },
    '/api/v2/runs/{run_id}': {
      get: operation('get', {
        id: 'getRun',
        summary: 'Read a run',
        description: `The run as it stands. Stateless /responses runs keep no copy of the exchange: their \`output\` is \`[]\` when read back. ${WHO}`,
        tag: 'Runs',
        access: readersAndApprovers,
        request: ReadRun,
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
        request: FollowRunEvents,
        responses: {
          '200': { description: 'The run\'s events.', headers: { 'X-Stream-Version': { description: 'The stream contract version.', schema: { type: 'string' } } }, content: { 'text/event-stream': { schema: ref('ResponseStream') } } },
        },
        errors: ['run_not_found'],
      }),
    },
    '/api/v2/runs/{run_id}/actions': {
      post: operation('post', {
        id: 'answerRunAction',
        summary: 'Answer a call the run waits on',
        description: `Beyond the spec (docs: "Actions"). A \`running\` run whose \`required_action\` names calls waits for them: send a \`decision\` for an \`approval\` (approving, with the call's \`arguments_sha256\`: a decision approves exactly the arguments it was shown), or the \`output\` of a \`client_tool\`. \`actions:approve\` answers approvals only. Idempotent by \`call_id\`: a second answer to the same call, whatever it says, gets the first one's outcome. A call that expired (denied at its \`expires_at\`), or of a run that ended, is 409 \`action_not_pending\`. ${WHO}`,
        tag: 'Runs',
        access: readersAndApprovers,
        request: AnswerAction,
        responses: { '200': json('What became of the call.', ref('RunAction')) },
        errors: ['run_not_found', 'action_not_found', 'action_not_pending'],
      }),
    },
    '/api/v2/runs/{run_id}/cancel': {
      post: operation('post', {
        id: 'cancelRun',
        summary: 'Cancel a run',
        description: `Idempotent: a finished run is answered as it ended. A running run settles once as \`cancelled\` (billed for what it used); the answer waits for that up to 5 seconds. ${WHO}`,
        tag: 'Runs',
        access: readers,
        request: CancelRun,
        responses: { '200': json('The run as it stands.', ref('RunResponse')) },
        errors: ['run_not_found'],
      }),
    },
  },
};
