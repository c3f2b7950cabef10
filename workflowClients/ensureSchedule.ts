import { defaultPayloadConverter } from '@temporalio/common';
import { ScheduleAlreadyRunning, ScheduleNotFoundError, WorkflowNotFoundError, type Client, type ScheduleOptions } from '@temporalio/client';
import { activeKeyFingerprint } from '../infra/encryption';
import { logger } from '../infra/logger';
import { payloadCodec } from '../infra/payloadCodec';

/**
 * Creates a service Schedule (the outbox dispatcher, the reconciler) unless it exists, and brings an
 * existing one up to date with the payload key. A Schedule keeps payloads sealed when it was created
 * (its action's, and each run's last result, handed to the next run): after the key ring loses that
 * key, or the development key changes with SIGNING_SECRET, every run it starts fails its first task.
 * So the Schedule records which key sealed it (in its memo, itself sealed), and a worker starting with
 * another active key, or unable to open that memo, makes it anew: paused if it was paused, its
 * running workflows (which cannot be opened either) terminated. Every worker of the queue calls this
 * at start, so a deployment has its Schedules without a separate step.
 */
export async function ensureSchedule(client: Client, options: ScheduleOptions): Promise<void> {
  const sealedWith = activeKeyFingerprint();
  const create = async (paused: boolean) => {
    try {
      await client.schedule.create({ ...options, memo: { sealedWith }, state: { ...options.state, paused } });
      return true;
    } catch (err) {
      if (err instanceof ScheduleAlreadyRunning) return false;
      throw err;
    }
  };
  if (await create(false)) return;
  const { schedule, info, memo } = await client.workflowService.describeSchedule({ namespace: client.options.namespace, scheduleId: options.scheduleId });
  if ((await recordedKey(memo?.fields?.sealedWith)) === sealedWith) return;
  await client.schedule
    .getHandle(options.scheduleId)
    .delete()
    .catch((err: unknown) => {
      if (!(err instanceof ScheduleNotFoundError)) throw err;
    });
  // The Schedule's own list of its running workflows can miss one it started moments before; visibility has them all.
  const running = new Map((info?.runningWorkflows ?? []).map((r) => [r.workflowId!, r.runId ?? undefined]));
  for await (const w of client.workflow.list({ query: `TemporalScheduledById = '${options.scheduleId}' AND ExecutionStatus = 'Running'` })) running.set(w.workflowId, w.runId);
  for (const [workflowId, runId] of running) {
    await client.workflow
      .getHandle(workflowId, runId)
      .terminate('its Schedule was made anew under the current payload key')
      .catch((err: unknown) => {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      });
  }
  await create(schedule?.state?.paused ?? false);
  logger.warn({ schedule: options.scheduleId, sealedWith, terminated: [...running.keys()] }, 'Schedule made anew: it was sealed with a payload key that is no longer the active one');
}

/** The key a Schedule says sealed it; undefined when it says none or its memo cannot be opened (no longer in the ring). */
async function recordedKey(payload: Parameters<typeof payloadCodec.decode>[0][number] | null | undefined): Promise<string | undefined> {
  if (!payload) return undefined;
  try {
    const [plain] = await payloadCodec.decode([payload]);
    return defaultPayloadConverter.fromPayload<string>(plain);
  } catch {
    return undefined;
  }
}
