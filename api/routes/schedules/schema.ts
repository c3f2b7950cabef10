import * as yup from 'yup';
import { invalidRequest } from '../../../domain/errors';
import { MIN_INTERVAL_SECONDS, OVERLAP_POLICIES, type OverlapPolicy } from '../../../domain/schedules';
import { IDEMPOTENCY_HEADERS } from '../../middleware/idempotent';
import { refined } from '../../../contract/parse';
import { about, described } from '../../../contract/about';
import { offsetParam, positiveParam } from '../../../contract/listQuery';
import { checkRunAhead, ExecutionBody } from '../../../contract/runtimeInput';

/** Larger list requests are clamped to this. */
export const MAX_SCHEDULE_LIMIT = 100;

const TIME_ZONES: ReadonlySet<string> = new Set(['UTC', ...Intl.supportedValuesOf('timeZone')]);

/** One cron field: `*`, a number or a range in [min, max], each with an optional step, in a list. */
function cronField(number: string): string {
  const item = `(\\*|${number}(-${number})?)(/[1-9][0-9]?)?`;
  return `${item}(,${item})*`;
}
// Five fields (minute to weekday, numbers only): a schedule fires at most once a minute. Temporal
// refuses what the pattern lets through and it cannot read (a range that runs backwards).
const CRON = new RegExp(
  `^${[
    cronField('[1-5]?[0-9]'),
    cronField('(1?[0-9]|2[0-3])'),
    cronField('([1-9]|[12][0-9]|3[01])'),
    cronField('([1-9]|1[0-2])'),
    cronField('[0-6]'),
  ].join(' ')}$`,
);

/** What a firing cannot be: streamed (nobody is there to read it), or for another agent than the schedule's. */
const notForAFiring = {
  not: {
    anyOf: [
      { required: ['agent'] },
      { required: ['stream'], properties: { stream: { const: true } } },
      { required: ['options'], properties: { options: { required: ['stream'], properties: { stream: { const: true } } } } },
    ],
  },
};

const fields = {
  run: (ExecutionBody.schema as yup.AnyObjectSchema).meta({
    jsonSchema: {
      ...(ExecutionBody.schema.describe().meta as { jsonSchema?: Record<string, unknown> }).jsonSchema,
      ...notForAFiring,
      description: 'The runtime input of each firing, as the body of POST /api/v2/agents/{agent_id}/runs, without `stream` and without `agent`.',
    },
  }),
  cron: yup
    .string()
    .max(200)
    .matches(CRON, 'cron must be five fields (minute hour day-of-month month day-of-week) of numbers, ranges, steps and lists, each in its range')
    .meta(about('A cron expression of five fields, in `timezone`. Exactly one of `cron` and `interval_seconds`.')),
  interval_seconds: yup
    .number()
    .integer('interval_seconds must be an integer')
    .min(MIN_INTERVAL_SECONDS, `interval_seconds must be at least ${MIN_INTERVAL_SECONDS}`)
    .max(366 * 86_400, 'interval_seconds must be at most a year')
    .meta(about('Fire every this many seconds. Exactly one of `cron` and `interval_seconds`.')),
  timezone: yup
    .string()
    .test('timezone', 'timezone must be an IANA time zone name (such as Europe/Paris)', (v) => v === undefined || TIME_ZONES.has(v))
    .meta({ jsonSchema: { enum: [...TIME_ZONES], description: 'An IANA time zone name. Default `UTC`.' } }),
  overlap: yup.string().oneOf(OVERLAP_POLICIES).meta(about('When a firing finds the last one still running: `skip` it (the default), run it once the last ends (`buffer_one`, at most one waiting), or run both (`allow`).')),
  paused: yup.boolean().meta(about('A paused schedule does not fire. Default false.')),
};

export interface ScheduleChange {
  run?: Record<string, unknown>;
  cron?: string;
  intervalSeconds?: number;
  timezone?: string;
  overlap?: OverlapPolicy;
  paused?: boolean;
}

/** The run each firing makes, checked now as its body would be: a schedule is accepted only when its firings could run. */
function checkRun(run: Record<string, unknown>): Record<string, unknown> {
  checkRunAhead(run, { at: 'run', within: 'on a schedule', agentIn: 'agent' });
  return run;
}

function readChange(body: { run?: Record<string, unknown>; cron?: string; interval_seconds?: number; timezone?: string; overlap?: string; paused?: boolean }): ScheduleChange {
  if (body.cron !== undefined && body.interval_seconds !== undefined) throw invalidRequest('Send one of cron and interval_seconds, not both.');
  return {
    ...(body.run !== undefined && { run: checkRun(body.run) }),
    ...(body.cron !== undefined && { cron: body.cron }),
    ...(body.interval_seconds !== undefined && { intervalSeconds: body.interval_seconds }),
    ...(body.timezone !== undefined && { timezone: body.timezone }),
    ...(body.overlap !== undefined && { overlap: body.overlap as OverlapPolicy }),
    ...(body.paused !== undefined && { paused: body.paused }),
  };
}

const createSchedule = yup
  .object({ agent: yup.string().required('agent is required').max(200).meta(about('The agent each firing runs.')), ...fields, run: fields.run.required('run is required') })
  .noUnknown(true, 'unknown key: ${unknown}')
  .strict()
  .meta({ jsonSchema: { oneOf: [{ required: ['cron'] }, { required: ['interval_seconds'] }] } });

/** POST /api/v2/schedules: the agent, the run, when (a cron expression or an interval, in a time zone), the overlap policy and the pause flag. */
export const CreateSchedule = {
  body: refined(createSchedule, (body) => {
    if (body.cron === undefined && body.interval_seconds === undefined) throw invalidRequest('Send cron or interval_seconds.');
    return { agent: body.agent, ...readChange(body) } as ScheduleChange & { agent: string; run: Record<string, unknown> };
  }),
  headers: IDEMPOTENCY_HEADERS,
};

const scheduleParams = yup.object({ id: yup.string().required().meta(about('The schedule id (`sch_…`).')) });

export const ReadSchedule = { params: scheduleParams };
export const DeleteSchedule = { params: scheduleParams };

/** PATCH /api/v2/schedules/{id}: any of the schedule's settings (not its agent); a cron replaces an interval and the other way round. */
export const UpdateSchedule = {
  params: scheduleParams,
  body: refined(
    yup
      .object(fields)
      .noUnknown(true, 'unknown key: ${unknown}')
      .strict()
      .meta({ jsonSchema: { minProperties: 1, not: { required: ['cron', 'interval_seconds'] } } }),
    (body) => {
      const change = readChange(body);
      if (Object.keys(change).length === 0) throw invalidRequest('Send at least one of run, cron, interval_seconds, timezone, overlap and paused.');
      return change;
    },
  ),
};

/** GET /api/v2/schedules: newest first, by `offset`. */
export const ListSchedules = {
  query: refined(
    yup
      .object({ limit: positiveParam('limit', 20, MAX_SCHEDULE_LIMIT), offset: described(offsetParam('offset'), 'Rows to skip.') })
      .noUnknown(true, 'unknown query parameter: ${unknown}')
      .strict(),
    (q) => ({ limit: Math.min(Number(q.limit ?? 20), MAX_SCHEDULE_LIMIT), offset: Number(q.offset ?? 0) }),
  ),
};
