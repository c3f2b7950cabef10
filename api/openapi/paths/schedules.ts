import { Schedule, ScheduleDeleted, ScheduleList } from '../../../domain/schedules';
import { CreateSchedule, DeleteSchedule, ListSchedules, ReadSchedule, UpdateSchedule } from '../../routes/schedules/schema';
import { replayMarker } from '../execution';
import { ref } from '../jsonSchema';
import { json, LOCATION, operation, type Resource } from '../operation';

const access = (scope: 'schedules:read' | 'schedules:write') => ({ credential: 'workspace' as const, scopes: [scope] as [typeof scope] });

export const schedules: Resource = {
  schemas: { Schedule },
  paths: {
    '/api/v2/schedules': {
      post: operation('post', {
        id: 'createSchedule',
        summary: 'Create a schedule',
        description:
          'Runs the agent on a cron expression or every `interval_seconds`, in `timezone`: each firing is an ordinary run (billed, logged, sent to webhooks with `correlation.schedule_id`), whose id is derived from the schedule and the fire time. Needs `agents:run` besides `schedules:write`; each firing checks the creating credential still holds it. Beyond the spec.',
        tag: 'Schedules',
        access: access('schedules:write'),
        request: CreateSchedule,
        responses: { '201': json('The schedule.', ref('Schedule'), { ...LOCATION, ...replayMarker('Idempotent-Replay') }) },
        errors: ['agent_not_found', 'idempotency_conflict', 'schedule_limit_reached'],
      }),
      get: operation('get', {
        id: 'listSchedules',
        summary: 'List schedules',
        description: 'Newest first, paged by offset.',
        tag: 'Schedules',
        access: access('schedules:read'),
        request: ListSchedules,
        responses: { '200': json('A page of schedules.', ScheduleList) },
      }),
    },
    '/api/v2/schedules/{id}': {
      get: operation('get', {
        id: 'getSchedule',
        summary: 'Read a schedule',
        tag: 'Schedules',
        access: access('schedules:read'),
        request: ReadSchedule,
        responses: { '200': json('The schedule, with its last firing.', ref('Schedule')) },
        errors: ['schedule_not_found'],
      }),
      patch: operation('patch', {
        id: 'updateSchedule',
        summary: 'Change, pause or resume a schedule',
        description: 'Any of its settings but its agent. A `cron` replaces an `interval_seconds`, and the other way round. Needs `agents:run` besides `schedules:write`, as creating one does.',
        tag: 'Schedules',
        access: access('schedules:write'),
        request: UpdateSchedule,
        responses: { '200': json('The schedule.', ref('Schedule')) },
        errors: ['schedule_not_found'],
      }),
      delete: operation('delete', {
        id: 'deleteSchedule',
        summary: 'Delete a schedule',
        description: 'It fires no more; a firing already running goes on.',
        tag: 'Schedules',
        access: access('schedules:write'),
        request: DeleteSchedule,
        responses: { '200': json('Deleted.', ScheduleDeleted) },
        errors: ['schedule_not_found'],
      }),
    },
  },
};
