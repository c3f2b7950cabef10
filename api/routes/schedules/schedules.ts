import Router from '@koa/router';
import type { Client } from '@temporalio/client';
import type { Context, Next } from 'koa';
import { ServiceError } from '../../../domain/errors';
import { mintId } from '../../../domain/ids';
import { scheduleDeleted, scheduleList, scheduleObject } from '../../../domain/schedules';
import { findAgentInWorkspace } from '../../../db/agents';
import { deleteSchedule, findSchedule, insertSchedule, lockedScheduleCount, lockSchedule, takeOverSchedule, schedulePage, updateSchedule, type ScheduleRow } from '../../../db/schedules';
import { transaction, type Sql } from '../../../db/sql';
import { config } from '../../../infra/config';
import { temporal } from '../../../infra/temporalClient';
import { deleteRunSchedule, putRunSchedule } from '../../../workflowClients/scheduledRun.client';
import { requireScope } from '../../middleware/credentials';
import { authorize } from '../../middleware/auth';
import { workspaceOf } from '../../../callers/principal';
import { idempotent } from '../../middleware/idempotent';
import { validate } from '../../middleware/validate';
import { type Input } from '../../../contract/parse';
import type { AppState } from '../../middleware/state';
import { notFound } from '../../../callers/tenancy';
import { CreateSchedule, DeleteSchedule, ListSchedules, ReadSchedule, UpdateSchedule } from './schema';

/**
 * Writes the row and its Temporal Schedule together: `write` runs in the transaction, then `sync`
 * brings the Schedule to the row before the commit, so a Schedule Temporal refuses (a cron
 * expression it cannot read: a 400) leaves nothing behind.
 */
async function inStep(write: (tx: Sql) => Promise<ScheduleRow | undefined>, sync: (client: Client, row: ScheduleRow) => Promise<void>): Promise<ScheduleRow | undefined> {
  const client = await temporal();
  return transaction(async (tx) => {
    const row = await write(tx);
    if (row) await sync(client, row);
    return row;
  });
}

/**
 * A workspace has at most SCHEDULES_PER_WORKSPACE schedules: each firing is a run and its workflows
 * on the queue every workspace shares. Counted with the workspace locked, so two creations at once
 * cannot both take the last place.
 */
async function withinLimit(workspaceId: number, tx: Sql): Promise<void> {
  const limit = config().schedules.perWorkspace;
  if ((await lockedScheduleCount(workspaceId, tx)) >= limit) {
    throw new ServiceError('schedule_limit_reached', `This workspace has ${limit} schedules, the most it may have: delete one before creating another.`);
  }
}

/** Creating or changing a schedule decides what its firings run: it needs what running them needs, besides schedules:write. */
async function runsAgents(ctx: Context & { state: AppState }, next: Next): Promise<void> {
  requireScope(ctx.state.principal!, ['agents:run']);
  await next();
}

/** Schedules: an agent's run on a cron expression or an interval, each firing an ordinary run (beyond the spec). */
export function schedulesRoutes(router: Router<AppState>): void {
  router.post<{ input: Input<typeof CreateSchedule> }>(
    '/api/v2/schedules',
    validate(CreateSchedule),
    authorize({ scopes: ['schedules:write'], endpoint: 'schedules_create' }),
    runsAgents,
    idempotent('Idempotent-Replay'),
    async (ctx) => {
      const { body } = ctx.state.input;
      const principal = ctx.state.principal!;
      const workspace = workspaceOf(principal);
      const agent = await findAgentInWorkspace(workspace.id, body.agent);
      if (!agent) throw notFound('agent_not_found');
      const resumed = ctx.state.recovery?.resumed;
      const earlier = resumed ? await findSchedule(workspace.id, resumed) : undefined;
      const id = resumed ?? mintId('schedule');
      if (!earlier) await ctx.state.recovery?.begin(id);
      const row =
        earlier ??
        (await inStep(
          async (tx) => {
            await withinLimit(workspace.id, tx);
            return insertSchedule(
              {
                publicId: id,
                workspaceId: workspace.id,
                agentPublicId: agent.publicId,
                run: body.run,
                cron: body.cron ?? null,
                intervalSeconds: body.intervalSeconds ?? null,
                timezone: body.timezone ?? 'UTC',
                overlap: body.overlap ?? 'skip',
                paused: body.paused ?? false,
                createdBy: { keyKey: principal.keyKey, memberKey: principal.memberKey, grantId: principal.grantId },
                requestId: ctx.state.requestId,
              },
              tx,
            );
          },
          (client, written) => putRunSchedule(client, written, workspace),
        ))!;
      ctx.status = 201;
      ctx.set('Location', `/api/v2/schedules/${row.public_id}`);
      ctx.body = scheduleObject(row);
    },
  );

  router.get<{ input: Input<typeof ListSchedules> }>(
    '/api/v2/schedules',
    validate(ListSchedules),
    authorize({ scopes: ['schedules:read'], endpoint: 'schedules_list' }),
    async (ctx) => {
      const { limit, offset } = ctx.state.input.query;
      const rows = await schedulePage(workspaceOf(ctx.state.principal).id, offset, limit + 1);
      ctx.body = scheduleList(rows, limit);
    },
  );

  router.get<{ input: Input<typeof ReadSchedule> }>(
    '/api/v2/schedules/:id',
    validate(ReadSchedule),
    authorize({ scopes: ['schedules:read'], endpoint: 'schedules_read' }),
    async (ctx) => {
      const row = await findSchedule(workspaceOf(ctx.state.principal).id, ctx.state.input.params.id);
      if (!row) throw notFound('schedule_not_found');
      ctx.body = scheduleObject(row);
    },
  );

  router.patch<{ input: Input<typeof UpdateSchedule> }>(
    '/api/v2/schedules/:id',
    validate(UpdateSchedule),
    authorize({ scopes: ['schedules:write'], endpoint: 'schedules_update' }),
    runsAgents,
    async (ctx) => {
      const { params, body } = ctx.state.input;
      const workspace = workspaceOf(ctx.state.principal);
      const row = await inStep(
        async (tx) => {
          const now = await lockSchedule(workspace.id, params.id, tx);
          if (!now) return undefined;
          // A cron replaces an interval, and the other way round.
          const when = body.cron !== undefined ? { cron: body.cron, intervalSeconds: null } : body.intervalSeconds !== undefined ? { cron: null, intervalSeconds: body.intervalSeconds } : { cron: now.cron, intervalSeconds: now.interval_seconds };
          // Resumed, it runs on behalf of whoever resumed it (who may run agents): a schedule its creator can no longer run is taken over.
          const { principal } = ctx.state;
          if (now.paused && body.paused === false) await takeOverSchedule(params.id, { keyKey: principal!.keyKey, memberKey: principal!.memberKey, grantId: principal!.grantId }, tx);
          return updateSchedule(workspace.id, params.id, { run: body.run ?? now.run, ...when, timezone: body.timezone ?? now.timezone, overlap: body.overlap ?? now.overlap, paused: body.paused ?? now.paused }, tx);
        },
        (client, written) => putRunSchedule(client, written, workspace),
      );
      if (!row) throw notFound('schedule_not_found');
      ctx.body = scheduleObject(row);
    },
  );

  router.delete<{ input: Input<typeof DeleteSchedule> }>(
    '/api/v2/schedules/:id',
    validate(DeleteSchedule),
    authorize({ scopes: ['schedules:write'], endpoint: 'schedules_delete' }),
    async (ctx) => {
      const { id } = ctx.state.input.params;
      const deleted = await transaction(async (tx) => {
        if (!(await deleteSchedule(workspaceOf(ctx.state.principal).id, id, tx))) return false;
        await deleteRunSchedule(await temporal(), id);
        return true;
      });
      if (!deleted) throw notFound('schedule_not_found');
      ctx.body = scheduleDeleted(id);
    },
  );
}
