import { log } from '@temporalio/activity';
import { creatorHolds } from '../domain/creators';
import { ServiceError } from '../domain/errors';
import { derivedId, mintId, mintTraceId } from '../domain/ids';
import type { RunInput } from '../domain/runs';
import type { Scope } from '../domain/scopes';
import { Outbox } from '../db/outbox';
import { pauseScheduleItself, recordFiring, scheduleCreator, scheduleToFire } from '../db/schedules';
import { transaction } from '../db/sql';
import { planRun } from '../planning/planRun';
import { parseExecutionRequest } from '../contract/runtimeInput';
import { scheduleObject, type PausedReason, type ScheduledRunInput } from '../domain/schedules';
import { rateLimiter } from '../callers/rateLimiter';
import { config } from '../infra/config';
import { temporal } from '../infra/temporalClient';
import { pauseRunSchedule } from '../workflowClients/scheduledRun.client';

// A scheduled run is never a preview: no scope that would allow one.
const FIRING_SCOPES: ReadonlySet<Scope> = new Set();

/**
 * Plans one firing: the schedule as it stands (none once deleted: nothing runs), its creator still
 * holding agents:run, the firing counted against the workspace's rate limits as a request to run
 * would be, the run's credits held under an id derived from the firing. A refusal is the firing's:
 * recorded on the schedule (blocked when the balance cannot cover the run, with
 * schedule.run_blocked; failed otherwise). The schedule goes on, unless it pauses itself, saying why
 * in its `paused_reason` and with one schedule.paused event: at once when its creator can no longer
 * run agents, or after SCHEDULE_PAUSE_AFTER_FAILURES firings in a row that could not run.
 */
export async function fireSchedule(f: ScheduledRunInput & { firingId: string; firedAt: number }): Promise<{ run?: RunInput }> {
  const schedule = await scheduleToFire(f.scheduleId);
  if (!schedule) return {};
  // Paused (by a caller, or by itself: then its Temporal Schedule is paused again, in case an earlier
  // attempt of this firing paused the row but not the Schedule): a firing runs nothing.
  if (schedule.paused) {
    if (schedule.paused_reason) await pauseRunSchedule(await temporal(), schedule.public_id, schedule.paused_reason.message);
    return {};
  }
  const at = new Date(f.firedAt);
  const runId = derivedId('run', f.firingId, f.firedAt);
  const ids = { requestId: mintId('request'), traceId: mintTraceId() };
  const creatorCanRun = creatorHolds(await scheduleCreator(schedule.id), 'agents:run');
  try {
    if (!creatorCanRun) throw new ServiceError('permission_denied', CREATOR_CANNOT_RUN);
    await countFiring(schedule);
    const request = parseExecutionRequest(schedule.run);
    const run = await planRun({ workspace: schedule.workspace, scopes: FIRING_SCOPES, ...ids }, request, { kind: 'agent_run', agentPublicId: schedule.agent_public_id }, runId, () => undefined);
    await recordFiring(schedule.id, { at, run: runId, status: 'started', errorCode: null });
    return { run: { ...run, scheduleId: schedule.public_id } };
  } catch (err) {
    if (!(err instanceof ServiceError)) throw err;
    const blocked = err.code === 'usage_blocked';
    const paused = await transaction(async (tx) => {
      const outbox = new Outbox(schedule.workspace, { ...ids, scheduleId: schedule.public_id });
      const inARow = await recordFiring(schedule.id, { at, run: null, status: blocked ? 'blocked' : 'failed', errorCode: err.code }, tx);
      if (blocked) outbox.add('schedule.run_blocked', { object: 'schedule_firing', schedule: schedule.public_id, agent: schedule.agent_public_id, fired_at: at.toISOString(), error: { code: err.code, message: err.message } });
      const reason = pausedReason(creatorCanRun, inARow, err, at);
      const row = reason && (await pauseScheduleItself(schedule.id, reason, tx));
      if (row) outbox.add('schedule.paused', scheduleObject(row));
      await outbox.write(tx);
      return row;
    });
    if (paused) await pauseRunSchedule(await temporal(), paused.public_id, paused.paused_reason!.message);
    return {};
  }
}

const CREATOR_CANNOT_RUN = 'Whoever created this schedule can no longer run agents (its key revoked, expired or without "agents:run", its member removed or without the role, or its OAuth grant revoked): it does not run.';

/** Why the schedule pauses itself after this firing, if it does. */
function pausedReason(creatorCanRun: boolean, inARow: number, err: ServiceError, at: Date): PausedReason | undefined {
  const paused_at = at.toISOString();
  if (!creatorCanRun) return { code: 'creator_cannot_run', message: `${CREATOR_CANNOT_RUN} Resume it with a credential that may run agents.`, paused_at };
  const limit = config().schedules.pauseAfterFailures;
  if (inARow < limit) return undefined;
  return { code: 'failing', message: `${inARow} firings in a row could not run (the last: ${err.code}, ${err.message}); resume it once that is fixed.`, paused_at };
}

/**
 * A firing is a request to run the agent: it counts against the workspace's limits (its tenant and
 * agent dimensions) as the API's requests do, under a credential dimension of its own schedule. A
 * limiter that cannot answer (Redis down) lets it through: its run is billed and bounded like any.
 */
async function countFiring(schedule: { public_id: string; agent_public_id: string; workspace: RunInput['workspace'] }): Promise<void> {
  let decision;
  try {
    decision = await rateLimiter().check({ credential: schedule.public_id, tenant: schedule.workspace.publicId, endpoint: 'schedule_firings', agent: schedule.agent_public_id });
  } catch (err) {
    log.warn('rate limiter unavailable: the firing is not counted', { schedule: schedule.public_id, error: String(err) });
    return;
  }
  if (!decision.allowed) throw new ServiceError('rate_limited', `The workspace's rate limit (${decision.limit} per ${decision.windowSeconds} s for this ${decision.dimension.replace('_', ' + ')}) was reached: this firing did not run.`);
}
