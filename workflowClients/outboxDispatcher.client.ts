import { ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import { ensureSchedule } from './ensureSchedule';
import { QUEUES, SEARCH_ATTRIBUTES, type TaskQueue } from './registry';
import { serviceDescribed } from './summaries';
import { DISPATCH_EVERY_MS } from '../domain/timings';

/** The dispatcher's Schedule: visible, pausable and triggerable under this id in the Temporal UI. */
export const DISPATCHER_SCHEDULE_ID = 'outbox-dispatcher';
const QUEUE: TaskQueue = QUEUES.webhooks;

/**
 * Creates the dispatcher's Schedule unless it exists (or remakes it under a new payload key), and starts its first run at once: every worker
 * that polls `webhooks` calls this at start, so a deployment has it without a separate step. Each run
 * lasts one interval; BUFFER_ONE starts the next as soon as it ends.
 */
export async function ensureOutboxDispatcher(client: Client): Promise<void> {
  await ensureSchedule(client, {
    scheduleId: DISPATCHER_SCHEDULE_ID,
    spec: { intervals: [{ every: DISPATCH_EVERY_MS }] },
    policies: { overlap: ScheduleOverlapPolicy.BUFFER_ONE },
    state: { triggerImmediately: true },
    action: {
      type: 'startWorkflow',
      workflowType: 'outboxDispatcher',
      workflowId: DISPATCHER_SCHEDULE_ID,
      taskQueue: QUEUE,
      args: [],
      workflowExecutionTimeout: DISPATCH_EVERY_MS * 10,
      typedSearchAttributes: [{ key: SEARCH_ATTRIBUTES.kind, value: 'outbox_dispatcher' }],
    ...serviceDescribed(['outbox dispatcher', 'outbox events → webhook deliveries']),
    },
  });
}
