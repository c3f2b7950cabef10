import { creatorHolds } from '../domain/creators';
import { ServiceError } from '../domain/errors';
import { derivedId, mintId, mintTraceId } from '../domain/ids';
import type { RunInput } from '../domain/runs';
import type { Scope } from '../domain/scopes';
import { Outbox } from '../db/outbox';
import { recordFiring, scheduleCreator, scheduleToFire } from '../db/schedules';
import { transaction } from '../db/sql';
import { planRun } from '../api/planRun';
import { parseExecutionRequest } from '../api/validation/runtimeInput';
import type { ScheduledRunInput } from '../domain/schedules';

// A scheduled run is never a preview: no scope that would allow one.
const FIRING_SCOPES: ReadonlySet<Scope> = new Set();

/**
 * Plans one firing: the schedule as it stands (none once deleted: nothing runs), its creator still
 * holding agents:run, the run's credits held under an id derived from the firing. A refusal is the
 * firing's, not the schedule's: recorded on the schedule (blocked when the balance cannot cover the
 * run, with schedule.run_blocked; failed otherwise), and the schedule goes on.
 */
export async function fireSchedule(f: ScheduledRunInput & { firingId: string; firedAt: number }): Promise<{ run?: RunInput }> {
  const schedule = await scheduleToFire(f.scheduleId);
  if (!schedule) return {};
  const at = new Date(f.firedAt);
  const runId = derivedId('run', f.firingId, f.firedAt);
  const ids = { requestId: mintId('request'), traceId: mintTraceId() };
  try {
    if (!creatorHolds(await scheduleCreator(schedule.id), 'agents:run')) {
      throw new ServiceError('permission_denied', 'The credential that created this schedule no longer holds "agents:run" (revoked, expired or changed): it does not run.');
    }
    const request = parseExecutionRequest(schedule.run);
    const run = await planRun({ workspace: schedule.workspace, scopes: FIRING_SCOPES, ...ids }, request, { kind: 'agent_run', agentPublicId: schedule.agent_public_id }, runId, () => undefined);
    await recordFiring(schedule.id, { at, run: runId, status: 'started', errorCode: null });
    return { run: { ...run, scheduleId: schedule.public_id } };
  } catch (err) {
    if (!(err instanceof ServiceError)) throw err;
    const blocked = err.code === 'usage_blocked';
    await transaction(async (tx) => {
      await recordFiring(schedule.id, { at, run: null, status: blocked ? 'blocked' : 'failed', errorCode: err.code }, tx);
      if (!blocked) return;
      const outbox = new Outbox(schedule.workspace, { ...ids, scheduleId: schedule.public_id });
      outbox.add('schedule.run_blocked', { object: 'schedule_firing', schedule: schedule.public_id, agent: schedule.agent_public_id, fired_at: at.toISOString(), error: { code: err.code, message: err.message } });
      await outbox.write(tx);
    });
    return {};
  }
}
