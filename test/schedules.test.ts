import { Client, Connection, ScheduleNotFoundError } from '@temporalio/client';
import { QueryTypes } from 'sequelize';
import { fireSchedule } from '../activities/schedules';
import { creditWorkspace } from '../db/workspaces';
import { db } from '../db/sequelize';
import { dataConverter } from '../infra/payloadCodec';
import { createWorkspaceKey, revokeKey } from '../admin/commands';
import { type Answer, call, callsHeld, inOneRateWindow, releaseHeld, scriptModel, tenant, type Tenant, until, useApi } from './support/stack';

// This file's own limits (its in-process API and the firings it plans itself read them).
process.env.SCHEDULES_PER_WORKSPACE = '3';
process.env.SCHEDULE_PAUSE_AFTER_FAILURES = '3';
process.env.RATE_LIMIT_AGENT = '4';
const api = useApi();
let client: Client;
beforeAll(async () => {
  client = new Client({ connection: await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! }), dataConverter });
});
afterAll(() => client.connection.close());

const SCOPES = ['schedules:write', 'schedules:read', 'agents:run'];

/**
 * Every 366 days, the longest interval: Temporal aligns intervals to the epoch, so an hourly one fired
 * by itself at each xx:00, among the test's own firings, whenever the suite ran across an hour.
 */
const YEARLY = 366 * 86_400;
const create = (t: Tenant, body: Record<string, unknown>): Promise<Answer> => call(api.url, 'POST', '/api/v2/schedules', { key: t.key, body: { agent: t.agent, run: { input: 'the morning digest' }, interval_seconds: YEARLY, ...body } });
const read = (t: Tenant, id: string): Promise<Answer> => call(api.url, 'GET', `/api/v2/schedules/${id}`, { key: t.key });

/** Fires the schedule now, as its spec would, with its own overlap policy. */
async function fire(id: string): Promise<void> {
  const handle = client.schedule.getHandle(id);
  await handle.trigger((await handle.describe()).policies.overlap);
}

type Firing = { fired_at: string; status: string; run: string | null; error_code: string | null };

/** The schedule's last firing once it is a firing after `since`. */
async function firedAfter(t: Tenant, id: string, since: string | null, spec?: string): Promise<Firing> {
  const probe = async () => {
    const firing = (await read(t, id)).body.last_firing as Firing | null;
    return firing && firing.fired_at !== since ? firing : undefined;
  };
  if (!spec) return until(probe, `a firing of ${id}`);
  // Fired by its spec: as late as Temporal makes it, within the test's own timeout.
  for (;;) {
    const firing = await probe();
    if (firing) return firing;
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function outboxOf(workspace: string): Promise<{ type: string; envelope: { correlation: Record<string, string>; data: { object: Record<string, unknown> } } }[]> {
  return db().query('SELECT e.type, e.envelope FROM outbox_events e JOIN workspaces w ON w.id = e.workspace_id WHERE w.public_id = :workspace ORDER BY e.id', {
    replacements: { workspace },
    type: QueryTypes.SELECT,
  });
}

describe('schedules', () => {
  it('creates a Temporal Schedule; each firing is an ordinary run, billed and sent to webhooks with correlation.schedule_id', async () => {
    const t = await tenant({ scopes: SCOPES, listened: true });
    const created = await create(t, { timezone: 'Europe/Paris' });
    expect(created.status).toBe(201);
    expect(created.headers.get('location')).toBe(`/api/v2/schedules/${created.body.id}`);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^sch_/),
      object: 'schedule',
      agent: t.agent,
      run: { input: 'the morning digest' },
      cron: null,
      interval_seconds: YEARLY,
      timezone: 'Europe/Paris',
      overlap: 'skip',
      paused: false,
      paused_reason: null,
      last_firing: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const id = created.body.id as string;
    const temporalSchedule = await client.schedule.getHandle(id).describe();
    expect(temporalSchedule.spec).toMatchObject({ intervals: [{ every: YEARLY * 1000 }], timezone: 'Europe/Paris' });
    expect(temporalSchedule.action).toMatchObject({ type: 'startWorkflow', workflowType: 'scheduledRun', taskQueue: 'background' });
    expect(temporalSchedule.policies.overlap).toBe('SKIP');
    // Its argument is the schedule's id alone, unsealed: a Schedule outlives payload keys, and an id is no secret.
    const { schedule } = await client.workflowService.describeSchedule({ namespace: client.options.namespace, scheduleId: id });
    const [arg] = schedule!.action!.startWorkflow!.input!.payloads!;
    expect(new TextDecoder().decode(arg.metadata!.encoding!)).toBe('json/plain');
    expect(JSON.parse(Buffer.from(arg.data!).toString())).toEqual({ scheduleId: id });

    await fire(id);
    const firing = await firedAfter(t, id, null);
    expect(firing).toMatchObject({ status: 'started', run: expect.stringMatching(/^run_/), error_code: null });
    const run = await until(async () => {
      const r = await call(api.url, 'GET', `/api/v2/runs/${firing.run}`, { key: t.key });
      return r.body.status === 'completed' ? r : undefined;
    }, 'the run to complete');
    expect(run.body).toMatchObject({ agent: t.agent, status: 'completed' });
    const events = (await outboxOf(t.workspace)).filter((e) => e.envelope.data.object.id === firing.run);
    expect(events.map((e) => e.type)).toEqual(['agent.run.started', 'agent.run.completed']);
    for (const e of events) expect(e.envelope.correlation.schedule_id).toBe(id);
    const listed = await call(api.url, 'GET', '/api/v2/schedules', { key: t.key });
    expect(listed.body).toMatchObject({ object: 'list', data: [{ id, last_firing: { status: 'started', run: firing.run } }], has_more: false });
  });

  it('fires on its own: a schedule every five seconds starts its runs until it is paused', async () => {
    const t = await tenant({ scopes: SCOPES });
    const id = (await create(t, { interval_seconds: 5 })).body.id as string;
    try {
      // Temporal's clock, not the test's: waited for without a bound on how late a firing may come.
      const firing = await firedAfter(t, id, null, 'each five seconds');
      expect(firing).toMatchObject({ status: 'started', run: expect.stringMatching(/^run_/) });
    } finally {
      await call(api.url, 'PATCH', `/api/v2/schedules/${id}`, { key: t.key, body: { paused: true } });
    }
  });

  it('a retried firing plans the same run once: its id is derived from the firing, its credits held once', async () => {
    const t = await tenant({ scopes: SCOPES });
    const id = (await create(t, {})).body.id as string;
    const firing = { scheduleId: id, firingId: `${id}-2026-11-25T08:00:00Z`, firedAt: Date.parse('2026-11-25T08:00:00Z') };
    const first = await fireSchedule(firing);
    const again = await fireSchedule(firing);
    expect(first.run!.runId).toMatch(/^run_01/);
    expect(again.run!.runId).toBe(first.run!.runId);
    expect(again.run!.scheduleId).toBe(id);
    const holds = await db().query('SELECT credits FROM credit_reservations WHERE run_public_id = :run', { replacements: { run: first.run!.runId }, type: QueryTypes.SELECT });
    expect(holds).toHaveLength(1);
    await db().query('DELETE FROM credit_reservations WHERE run_public_id = :run', { replacements: { run: first.run!.runId } });
  });

  it('pause stops it and resume starts it again, in Temporal too; a cron replaces the interval', async () => {
    const t = await tenant({ scopes: SCOPES });
    const id = (await create(t, {})).body.id as string;
    const paused = await call(api.url, 'PATCH', `/api/v2/schedules/${id}`, { key: t.key, body: { paused: true } });
    expect(paused.body).toMatchObject({ paused: true, interval_seconds: YEARLY });
    expect((await client.schedule.getHandle(id).describe()).state.paused).toBe(true);
    const resumed = await call(api.url, 'PATCH', `/api/v2/schedules/${id}`, { key: t.key, body: { paused: false, cron: '0 8 * * 1-5' } });
    expect(resumed.body).toMatchObject({ paused: false, cron: '0 8 * * 1-5', interval_seconds: null });
    const described = await client.schedule.getHandle(id).describe();
    expect(described.state.paused).toBe(false);
    expect(described.spec).toMatchObject({ timezone: 'UTC' });
    expect(described.spec.intervals ?? []).toEqual([]);
    expect(described.spec.calendars?.length ?? 0).toBeGreaterThan(0);
    const empty = await call(api.url, 'PATCH', `/api/v2/schedules/${id}`, { key: t.key, body: {} });
    expect(empty.status).toBe(400);
  });

  it('overlap skip: a firing that finds the last one running is skipped', async () => {
    const t = await tenant({ scopes: SCOPES });
    const id = (await create(t, { overlap: 'skip' })).body.id as string;
    await scriptModel(t.model, [{ text: 'slow digest', hold: true }]);
    try {
      await fire(id);
      await callsHeld(t.model, 1, 'the first firing’s call');
      await fire(id);
      const skipped = await until(async () => {
        const info = (await client.schedule.getHandle(id).describe()).info;
        return info.numActionsSkippedOverlap > 0 ? info : undefined;
      }, 'the second firing skipped');
      expect(skipped).toMatchObject({ numActionsSkippedOverlap: 1, numActionsTaken: 1 });
    } finally {
      await releaseHeld(t.model);
    }
  });

  it('delete stops it: gone from the API and from Temporal, and a firing already on its way runs nothing', async () => {
    const t = await tenant({ scopes: SCOPES });
    const id = (await create(t, {})).body.id as string;
    const deleted = await call(api.url, 'DELETE', `/api/v2/schedules/${id}`, { key: t.key });
    expect(deleted.body).toEqual({ id, object: 'schedule', deleted: true });
    expect((await read(t, id)).status).toBe(404);
    expect((await call(api.url, 'DELETE', `/api/v2/schedules/${id}`, { key: t.key })).status).toBe(404);
    await expect(client.schedule.getHandle(id).describe()).rejects.toBeInstanceOf(ScheduleNotFoundError);
    const late = await fireSchedule({ scheduleId: id, firingId: `${id}-late`, firedAt: Date.now() });
    expect(late).toEqual({});
  });

  it('a firing the balance cannot cover is blocked (schedule.run_blocked), and the schedule goes on', async () => {
    const t = await tenant({ scopes: SCOPES, credits: 0, listened: true });
    const id = (await create(t, {})).body.id as string;
    await fire(id);
    const blocked = await firedAfter(t, id, null);
    expect(blocked).toMatchObject({ status: 'blocked', run: null, error_code: 'usage_blocked' });
    const [event] = (await outboxOf(t.workspace)).filter((e) => e.type === 'schedule.run_blocked');
    expect(event.envelope.data.object).toMatchObject({ object: 'schedule_firing', schedule: id, agent: t.agent, fired_at: blocked.fired_at, error: { code: 'usage_blocked' } });
    expect(event.envelope.correlation.schedule_id).toBe(id);
    expect((await client.schedule.getHandle(id).describe()).state.paused).toBe(false);

    await creditWorkspace(t.workspace, 1_000_000);
    await fire(id);
    expect(await firedAfter(t, id, blocked.fired_at)).toMatchObject({ status: 'started', run: expect.stringMatching(/^run_/) });
  });

  it('refuses what it could not run: 400 for the rules, 403 without agents:run, 404 for an unknown agent or another workspace’s schedule', async () => {
    const t = await tenant({ scopes: SCOPES });
    const refused = async (body: Record<string, unknown>, message: RegExp) => {
      const answer = await create(t, body);
      expect([answer.status, answer.body.error?.message]).toEqual([400, expect.stringMatching(message)]);
    };
    await refused({ cron: '0 8 * * *' }, /one of cron and interval_seconds/);
    await refused({ interval_seconds: undefined }, /cron or interval_seconds/);
    await refused({ interval_seconds: 4 }, /at least 5/);
    await refused({ timezone: 'Mars/Olympus' }, /IANA time zone/);
    await refused({ interval_seconds: undefined, cron: 'every morning' }, /five fields/);
    await refused({ interval_seconds: undefined, cron: '61 * * * *' }, /each in its range/);
    await refused({ interval_seconds: undefined, cron: '5-2 * * * *' }, /Temporal refused the schedule/);
    await refused({ run: { input: 'x', stream: true } }, /run: stream is not available/);
    await refused({ run: { input: 'x', model: 'gpt-4o' } }, /run: "model" may not be set/);
    expect((await call(api.url, 'GET', '/api/v2/schedules', { key: t.key })).body.data).toEqual([]);
    // An offset past the cap (or past a bigint) is a 400, not a 500.
    const deep = await call(api.url, 'GET', '/api/v2/schedules?offset=99999999999999999999', { key: t.key });
    expect([deep.status, deep.body.error?.message]).toEqual([400, expect.stringMatching(/offset must be an integer from 0 to 100000/)]);

    const reader = await tenant({ scopes: ['schedules:write', 'schedules:read'] });
    expect((await create(reader, {})).status).toBe(403);
    // Changing one decides what its firings run: it needs agents:run too.
    expect((await call(api.url, 'PATCH', `/api/v2/schedules/sch_01hzzzzzzzzzzzzzzzzzzzzzzz`, { key: reader.key, body: { run: { input: 'mine now' } } })).status).toBe(403);
    expect((await create(t, { agent: 'agt_01hzzzzzzzzzzzzzzzzzzzzzzz' })).status).toBe(404);
    const other = await tenant({ scopes: SCOPES });
    const theirs = (await create(other, {})).body.id as string;
    expect((await read(t, theirs)).status).toBe(404);
    expect((await call(api.url, 'PATCH', `/api/v2/schedules/${theirs}`, { key: t.key, body: { paused: true } })).status).toBe(404);
  });
});

describe('schedules are bounded', () => {
  const firing = (id: string, n: number) => ({ scheduleId: id, firingId: `${id}-${n}`, firedAt: Date.parse('2026-11-27T08:00:00Z') + n * 1000 });
  const eventsOf = async (t: Tenant, type: string) => (await outboxOf(t.workspace)).filter((e) => e.type === type);

  it('a workspace has at most SCHEDULES_PER_WORKSPACE schedules: 409 schedule_limit_reached, and a deleted one frees its place', async () => {
    const t = await tenant({ scopes: SCOPES });
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await create(t, {})).body.id as string);
    const refused = await create(t, {});
    expect([refused.status, refused.body.error.code]).toEqual([409, 'schedule_limit_reached']);
    expect(refused.body.error.message).toMatch(/3 schedules/);
    expect((await call(api.url, 'GET', '/api/v2/schedules', { key: t.key })).body.data).toHaveLength(3);
    await call(api.url, 'DELETE', `/api/v2/schedules/${ids[0]}`, { key: t.key });
    expect((await create(t, {})).status).toBe(201);
  });

  it('pauses itself after SCHEDULE_PAUSE_AFTER_FAILURES firings in a row that could not run, with one schedule.paused event; resuming clears why', async () => {
    const t = await tenant({ scopes: SCOPES, credits: 0, listened: true });
    const id = (await create(t, {})).body.id as string;
    for (let n = 1; n <= 4; n++) await fireSchedule(firing(id, n));
    const paused = (await read(t, id)).body;
    expect(paused).toMatchObject({ paused: true, paused_reason: { code: 'failing', message: expect.stringMatching(/^3 firings in a row could not run \(the last: usage_blocked/) }, last_firing: { status: 'blocked' } });
    expect((await client.schedule.getHandle(id).describe()).state).toMatchObject({ paused: true, note: paused.paused_reason.message });
    // One event for the pause; a firing after it (triggered, or an attempt retried) records and runs nothing.
    const [event, ...more] = await eventsOf(t, 'schedule.paused');
    expect(more).toEqual([]);
    expect(event.envelope.data.object).toMatchObject({ id, object: 'schedule', paused: true, paused_reason: { code: 'failing' } });
    expect(await eventsOf(t, 'schedule.run_blocked')).toHaveLength(3);

    const resumed = await call(api.url, 'PATCH', `/api/v2/schedules/${id}`, { key: t.key, body: { paused: false } });
    expect(resumed.body).toMatchObject({ paused: false, paused_reason: null });
    // Counted afresh: the next failure alone does not pause it again.
    await fireSchedule(firing(id, 5));
    expect((await read(t, id)).body).toMatchObject({ paused: false, paused_reason: null });
  });

  it('pauses itself at once when its creator can no longer run agents, and says why', async () => {
    const t = await tenant({ scopes: SCOPES });
    const id = (await create(t, {})).body.id as string;
    const [{ key }] = await db().query<{ key: string }>('SELECT k.public_id AS key FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id WHERE w.public_id = :ws', { replacements: { ws: t.workspace }, type: QueryTypes.SELECT });
    await revokeKey({ id: key });
    expect(await fireSchedule(firing(id, 1))).toEqual({});
    const [row] = await db().query<{ paused: boolean; paused_reason: { code: string; message: string }; last_error_code: string }>('SELECT paused, paused_reason, last_error_code FROM schedules WHERE public_id = :id', { replacements: { id }, type: QueryTypes.SELECT });
    expect(row).toMatchObject({ paused: true, paused_reason: { code: 'creator_cannot_run', message: expect.stringMatching(/can no longer run agents \(its key revoked/) }, last_error_code: 'permission_denied' });
    expect((await client.schedule.getHandle(id).describe()).state.paused).toBe(true);
    // Resumed by a credential that may run agents, it runs on its behalf.
    const other = (await createWorkspaceKey({ workspace: t.workspace, scopes: SCOPES.join(',') })).key;
    expect((await call(api.url, 'PATCH', `/api/v2/schedules/${id}`, { key: other, body: { paused: false } })).body).toMatchObject({ paused: false, paused_reason: null });
    expect((await fireSchedule(firing(id, 2))).run).toBeDefined();
  });

  it('its firings count against the workspace’s rate limits, as requests to run the agent', async () => {
    const t = await tenant({ scopes: SCOPES });
    const id = (await create(t, {})).body.id as string;
    const outcomes = await inOneRateWindow(async () => {
      const planned = [];
      for (let n = 1; n <= 5; n++) planned.push(await fireSchedule(firing(id, n)));
      return planned;
    });
    expect(outcomes.map((o) => o.run !== undefined)).toEqual([true, true, true, true, false]);
    expect((await read(t, id)).body.last_firing).toMatchObject({ status: 'failed', error_code: 'rate_limited', run: null });
    await db().query('DELETE FROM credit_reservations WHERE run_public_id IN (:runs)', { replacements: { runs: outcomes.flatMap((o) => (o.run ? [o.run.runId] : [])) } });
  });
});
