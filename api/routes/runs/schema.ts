import * as yup from 'yup';
import { about, described } from '../../../contract/about';
import { idFilter, listQuery, once, oneOfFilter } from '../../../contract/listQuery';
import { refined } from '../../../contract/parse';
import { invalidRequest, RUN_STATUSES } from '../../../domain/errors';
import { RUN_KINDS } from '../../../domain/runs';
import { MAX_ACTION_OUTPUT_CHARS, type ActionAnswer } from '../../../domain/actions';

export const MAX_RUN_LIMIT = 100;

const instant = (name: string, description: string) => once(name, { format: 'date-time', description }).test(name, `${name} must be an ISO 8601 time.`, (v) => v === undefined || (/^\d{4}-\d{2}-\d{2}T/.test(v) && !Number.isNaN(Date.parse(v))));

const runParams = yup.object({ run_id: yup.string().required().meta(about('The run id (`run_…`).')) });

export const ReadRun = { params: runParams };
export const CancelRun = { params: runParams };

const actionAnswer = yup
  .object({
    call_id: yup.string().required('call_id is required').max(200).meta(about('The call to answer: a `call_id` of the run\'s `required_action`.')),
    decision: yup.string().oneOf(['approve', 'deny'], 'decision must be approve or deny').meta(about('For an `approval`: make the call, or do not (the model is told it was denied).')),
    reason: yup.string().max(1000).meta(about('With a decision: why (a denial\'s reason is told to the model).')),
    arguments_sha256: yup
      .string()
      .matches(/^[0-9a-f]{64}$/, 'arguments_sha256 must be a SHA-256 in hex (64 characters 0-9a-f)')
      .meta(about('With `approve`: the `arguments_sha256` of the call as the approver was shown it, so the decision approves exactly those arguments. Required to approve a call that shows one.')),
    output: yup.string().max(MAX_ACTION_OUTPUT_CHARS).meta(about('For a `client_tool`: what the tool gave, told to the model as its result.')),
  })
  .noUnknown(true, 'unknown key: ${unknown}')
  .strict()
  .meta({ jsonSchema: { oneOf: [{ required: ['decision'], not: { required: ['output'] } }, { required: ['output'], not: { anyOf: [{ required: ['decision'] }, { required: ['reason'] }, { required: ['arguments_sha256'] }] } }] } });

/**
 * POST /api/v2/runs/{run_id}/actions: a decision on a call that needs approval, or a client tool's
 * output. Idempotent by call_id: a second answer to the same call gets the first one's outcome.
 */
export const AnswerAction = {
  params: runParams,
  body: refined(actionAnswer, (body): ActionAnswer => {
    if ((body.decision === undefined) === (body.output === undefined)) throw invalidRequest('Send a decision (approve or deny) or an output, one of the two.');
    if (body.reason !== undefined && body.decision === undefined) throw invalidRequest('reason goes with a decision.');
    if (body.arguments_sha256 !== undefined && body.decision === undefined) throw invalidRequest('arguments_sha256 goes with a decision.');
    return body as ActionAnswer;
  }),
};

/** Following a run's events, resuming after Last-Event-ID (an id this stream gave out). */
export const FollowRunEvents = {
  params: runParams,
  headers: yup.object({ 'last-event-id': yup.string().matches(/^\d+-\d+$/, 'Last-Event-ID must be an event id from this stream.').meta(about('The last `id:` read: resume after it.')) }),
};

/**
 * GET /api/v2/runs: the workspace's runs, newest first, filtered to those that need attention:
 * `status` (one or more, comma-separated: failed,blocked), `agent`, `kind`, `created_after` and
 * `created_before`, `queued_longer_than_ms` (waited in the queue longer than that), `reconciled`
 * (settled by the reconciler).
 */
export const ListRuns = {
  query: listQuery('run', MAX_RUN_LIMIT, {
    status: once('status', { pattern: `^(${RUN_STATUSES.join('|')})(,(${RUN_STATUSES.join('|')}))*$`, description: 'One or more statuses, comma-separated (`failed,blocked`).' }).test('status', `status must be one or more of ${RUN_STATUSES.join(', ')}, comma-separated.`, (v) => v === undefined || v.split(',').every((s) => (RUN_STATUSES as readonly string[]).includes(s))),
    agent: idFilter('agent', 'agent', 'an agent id (agt_…)'),
    kind: oneOfFilter('kind', RUN_KINDS),
    created_after: instant('created_after', 'Created at or after this time.'),
    created_before: instant('created_before', 'Created before this time.'),
    queued_longer_than_ms: once('queued_longer_than_ms', { type: 'integer', minimum: 0, maximum: 9999999999, description: 'Runs that waited in the queue longer than this.' }).test('queued_longer_than_ms', 'queued_longer_than_ms must be a non-negative integer.', (v) => v === undefined || /^[0-9]{1,10}$/.test(v)),
    reconciled: described(oneOfFilter('reconciled', ['true', 'false']), 'Settled by the reconciler, or not.'),
  }),
};
