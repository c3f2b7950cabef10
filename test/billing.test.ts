import { QueryTypes } from 'sequelize';
import * as admin from '../admin/commands';
import { beginRun, settleRun } from '../activities/runs';
import { mintId, mintTraceId } from '../domain/ids';
import { type RunInput } from '../domain/runs';
import { ZERO_USAGE } from '../domain/usage';
import { redis } from '../infra/redis';
import { db } from '../db/sequelize';
import { runEventsKey } from '../domain/streamEvents';
import { maxRunCost } from '../domain/billing';
import { countTokens } from 'gpt-tokenizer';
import { call, heldRequests, providerRequests, releaseHeld, scriptModel, listeningPartner, tenant, until, useApi } from './support/stack';

const api = useApi();

const rows = <T extends object>(sql: string, replacements: Record<string, unknown>) => db().query<T>(sql, { replacements, type: QueryTypes.SELECT });

describe('billing', () => {
  it('refuses a workspace without credits with 402 before any record or model call', async () => {
    const t = await tenant({ credits: 0, scopes: ['responses:create'] });
    const res = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'hi' } });
    expect(res.status).toBe(402);
    expect(res.body.error.code).toBe('usage_blocked');
    expect(res.body).not.toHaveProperty('id');
    expect(await providerRequests(t.model)).toHaveLength(0);
    const [runs] = await rows<{ n: number }>('SELECT count(*)::int AS n FROM runs r JOIN workspaces w ON w.id = r.workspace_id WHERE w.public_id = :ws', { ws: t.workspace });
    expect(runs.n).toBe(0);
  });

  it('bills each run once on the ledger line of its channel; an empty channel falls through to the conversation', async () => {
    const t = await tenant({ scopes: ['agents:run', 'conversations:create', 'messages:create'] });
    await call(api.url, 'POST', `/api/v2/agents/${t.agent}/runs`, { key: t.key, body: { input: 'hi', channel: 'whatsapp' } });
    const conv = await call(api.url, 'POST', '/api/v2/conversations', { key: t.key, body: { agent: t.agent, channel: 'web' } });
    await call(api.url, 'POST', `/api/v2/conversations/${conv.body.id}/messages`, { key: t.key, body: { input: 'hi', channel: '' } });
    await call(api.url, 'POST', `/api/v2/conversations/${conv.body.id}/messages`, { key: t.key, body: { input: 'hi', channel: 'api' } });
    const lines = await rows<{ line: string; credits: number }>(
      'SELECT l.line, l.credits FROM ledger_lines l JOIN workspaces w ON w.id = l.workspace_id WHERE w.public_id = :ws ORDER BY l.id',
      { ws: t.workspace },
    );
    expect(lines).toEqual([{ line: 'whatsapp', credits: 15 }, { line: 'web', credits: 15 }, { line: 'api', credits: 15 }]);
  });

  /** A run's input as the API would build it, for calling the bookkeeping activities directly. */
  async function runInput(kind: RunInput['kind'], channel: string): Promise<{ input: RunInput; ws: { id: number } }> {
    // A partner's workspace with an endpoint: only such a workspace's changes write outbox events.
    const t = await tenant({ listened: true });
    const ws = (await rows<{ id: number; partner: string; tenantRef: string }>(
      'SELECT w.id, p.public_id AS partner, w.tenant_ref AS "tenantRef" FROM workspaces w JOIN partners p ON p.id = w.partner_id WHERE w.public_id = :ws',
      { ws: t.workspace },
    ))[0];
    const agent = (await rows<{ id: number }>('SELECT id FROM agents WHERE public_id = :a', { a: t.agent }))[0];
    const input: RunInput = {
      runId: mintId('run'), kind, requestId: mintId('request'), traceId: mintTraceId(),
      workspace: { id: ws.id, publicId: t.workspace, tenantRef: ws.tenantRef, partnerPublicId: ws.partner },
      agent: { id: agent.id, publicId: t.agent, version: 1, config: {} },
      input: 'hi', attachments: [], channel, metadata: {}, requestContext: {},
      options: { knowledgePolicy: 'auto', memoryPolicy: 'auto', toolPolicy: 'auto', preview: false, stream: false, timeoutMs: 60000, responseFormat: { type: 'text' } },
      acceptedAt: Date.now(),
    };
    return { input, ws };
  }

  it('settles once even when the settlement activity runs again', async () => {
    const { input, ws } = await runInput('agent_run', 'api');
    const begun = await beginRun(input);
    expect(await beginRun(input)).toEqual(begun);
    const settlement = { input, status: 'completed' as const, output: [{ type: 'text' as const, text: 'ok' }], usage: { input_tokens: 40, output_tokens: 2, total_tokens: 42, cached_tokens: 0 }, model: 'm', toolNames: [] };
    await settleRun(settlement);
    await settleRun(settlement);
    const [ledger] = await rows<{ n: number; credits: number }>('SELECT count(*)::int AS n, sum(credits)::int AS credits FROM ledger_lines WHERE workspace_id = :ws', { ws: ws.id });
    expect(ledger).toEqual({ n: 1, credits: 42 });
    const [balance] = await rows<{ credits: number }>('SELECT credits FROM workspaces WHERE id = :ws', { ws: ws.id });
    expect(balance.credits).toBe(1_000_000 - 42);
    const [events] = await rows<{ n: number }>("SELECT count(*)::int AS n FROM outbox_events WHERE workspace_id = :ws AND type = 'agent.run.completed'", { ws: ws.id });
    expect(events.n).toBe(1);
  });

  it('settles a run whose first call never recorded it: recorded and settled together, once', async () => {
    const { input, ws } = await runInput('response', '');
    const settlement = { input, status: 'failed' as const, output: [], usage: ZERO_USAGE, model: 'm', toolNames: [], error: { code: 'provider_unavailable' as const, message: 'down' } };
    const outcome = await settleRun(settlement);
    expect(outcome).toMatchObject({ run: { id: input.runId, status: 'failed' }, error: { code: 'provider_unavailable' } });
    await settleRun(settlement);
    const [run] = await rows<{ status: string; error_code: string }>('SELECT status, error_code FROM runs WHERE public_id = :id', { id: input.runId });
    expect(run).toEqual({ status: 'failed', error_code: 'provider_unavailable' });
    const types = await rows<{ type: string }>('SELECT type FROM outbox_events WHERE workspace_id = :ws ORDER BY id', { ws: ws.id });
    expect(types.map((e) => e.type)).toEqual(['agent.run.started', 'agent.run.failed']);
    const [ledger] = await rows<{ n: number }>('SELECT count(*)::int AS n FROM ledger_lines WHERE workspace_id = :ws', { ws: ws.id });
    expect(ledger.n).toBe(1);
    // Its stream still starts with response.started and has one terminal event, however often it settles.
    const stream = await redis().xrange(runEventsKey(input.runId), '-', '+');
    expect(stream.map(([, fields]) => fields[1])).toEqual(['response.started', 'response.failed']);
  });
});

describe('outbox', () => {
  it('writes every event of a run with the envelope fields, in the transactions that made the changes', async () => {
    const partner = { id: await listeningPartner() };
    // The run reserves at most 114 credits (output capped at 5 tokens), costs 15, and crosses the threshold.
    const ws = await admin.createWorkspace({ name: 'merchant', credits: 200, usageThreshold: 190, partner: partner.id, tenantRef: 'merchant-42' });
    const key = await admin.createWorkspaceKey({ workspace: ws.id, scopes: 'agents:run' });
    const agent = await admin.createAgent({ workspace: ws.id, name: 'a', config: { model: `stub-outbox-${ws.id}`, max_output_tokens: 5 } });
    const res = await call(api.url, 'POST', `/api/v2/agents/${agent.id}/runs`, { key: key.key, body: { input: 'hi', external_ref: 'thread-1' } });
    expect(res.status).toBe(200);

    const events = await rows<{ type: string; envelope: any }>(
      'SELECT e.type, e.envelope FROM outbox_events e JOIN workspaces w ON w.id = e.workspace_id WHERE w.public_id = :ws ORDER BY e.id',
      { ws: ws.id },
    );
    expect(events.map((e) => e.type)).toEqual([
      'conversation.created',
      'message.received',
      'agent.run.started',
      'usage.threshold_reached',
      'message.sent',
      'agent.run.completed',
    ]);
    for (const { type, envelope } of events) {
      expect(envelope).toEqual({
        id: expect.stringMatching(/^evt_/),
        type,
        api_version: '2026-06-01',
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        tenant: ws.id,
        tenant_ref: 'merchant-42',
        partner: partner.id,
        data: { object: expect.any(Object) },
        correlation: { request_id: res.body.request_id, trace_id: res.body.trace_id, job_id: '' },
      });
    }
    expect(events[5].envelope.data.object).toMatchObject({ id: res.body.id, status: 'completed' });
    expect(events[3].envelope.data.object).toMatchObject({ balance: 185, threshold: 190 });
  });

  it('records agent.run.failed for a run that fails', async () => {
    const t = await tenant({ scopes: ['responses:create'], listened: true });
    const res = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'hi', response_format: 'json_object' } });
    expect(res.status).toBe(422);
    const types = await rows<{ type: string }>('SELECT e.type FROM outbox_events e JOIN workspaces w ON w.id = e.workspace_id WHERE w.public_id = :ws ORDER BY e.id', { ws: t.workspace });
    expect(types.map((e) => e.type)).toEqual(['agent.run.started', 'agent.run.failed']);
  });
});

describe('outbox, only where someone can hear it', () => {
  it('writes no events for a workspace without a partner, nor for one whose partner has no endpoint', async () => {
    const alone = await tenant({ scopes: ['responses:create'] });
    const partner = await admin.createPartner({ name: 'no endpoint yet' });
    const ws = await admin.createWorkspace({ name: 'merchant', credits: 1_000_000, partner: partner.id, tenantRef: `quiet-${partner.id}` });
    const key = await admin.createWorkspaceKey({ workspace: ws.id, scopes: 'responses:create' });
    const agent = await admin.createAgent({ workspace: ws.id, name: 'a', config: { model: `stub-quiet-${ws.id}` } });
    for (const [workspace, body, bearer] of [
      [alone.workspace, { agent: alone.agent, input: 'hi' }, alone.key],
      [ws.id, { agent: agent.id, input: 'hi' }, key.key],
    ] as const) {
      const res = await call(api.url, 'POST', '/api/v2/responses', { key: bearer, body });
      expect(res.body.status).toBe('completed');
      const [events] = await rows<{ n: number }>('SELECT count(*)::int AS n FROM outbox_events e JOIN workspaces w ON w.id = e.workspace_id WHERE w.public_id = :ws', { ws: workspace });
      expect(events.n).toBe(0);
    }
  });
});

describe('credit reservations', () => {
  it('holds each run’s maximum cost: of 20 concurrent runs on a balance for 5, 5 run, the rest are 402, and the balance never goes below zero', async () => {
    const config = { max_output_tokens: 50 };
    const maximum = maxRunCost({ config, request: ['hi', []], format: { type: 'text' }, tools: [], memory: false, knowledge: false });
    const t = await tenant({ credits: 5 * maximum + maximum - 1, config });
    // Held until the 15 refusals are in: no run settles (and frees its hold) while the others ask.
    await scriptModel(t.model, Array.from({ length: 20 }, () => ({ text: 'ok', hold: true })));
    let answered = 0;
    const asked = Array.from({ length: 20 }, () => call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'hi' } }).finally(() => answered++));
    try {
      await until(async () => (answered === 15 && (await heldRequests(t.model)) === 5) || undefined, 'five calls held, fifteen answered');
    } finally {
      await releaseHeld(t.model);
    }
    const answers = await Promise.all(asked);
    expect(answers.filter((a) => a.status === 200)).toHaveLength(5);
    const refused = answers.filter((a) => a.status !== 200);
    expect(refused.every((a) => a.status === 402 && a.body.error.code === 'usage_blocked')).toBe(true);
    const [ledger] = await rows<{ n: number; credits: number }>(
      'SELECT count(*)::int AS n, sum(l.credits)::int AS credits FROM ledger_lines l JOIN workspaces w ON w.id = l.workspace_id WHERE w.public_id = :ws',
      { ws: t.workspace },
    );
    expect(ledger).toEqual({ n: 5, credits: 75 });
    const [balance] = await rows<{ credits: number; held: number }>(
      'SELECT w.credits, (SELECT count(*)::int FROM credit_reservations c WHERE c.workspace_id = w.id) AS held FROM workspaces w WHERE w.public_id = :ws',
      { ws: t.workspace },
    );
    // Every reservation was given back, less what each run cost.
    expect(balance).toEqual({ credits: 6 * maximum - 1 - 75, held: 0 });
  });

  it("sends only the history its reservation counted, and says in the run's log what it left uncharged", async () => {
    // History counts 2 messages of 8 tokens: about 64 characters.
    const t = await tenant({ scopes: ['agents:run', 'conversations:create', 'messages:create', 'logs:read'], config: { max_output_tokens: 8, memory: { max_messages: 2 } } });
    const conv = await call(api.url, 'POST', '/api/v2/conversations', { key: t.key, body: { agent: t.agent } });
    const long = 'x'.repeat(200_000);
    await scriptModel(t.model, [{ text: 'noted' }, { text: 'ok' }, { text: 'ok', usage: { prompt_tokens: 1_000_000, completion_tokens: 8 } }]);
    expect((await call(api.url, 'POST', `/api/v2/conversations/${conv.body.id}/messages`, { key: t.key, body: { input: long } })).status).toBe(200);
    const second = await call(api.url, 'POST', `/api/v2/conversations/${conv.body.id}/messages`, { key: t.key, body: { input: 'and then?' } });
    expect(second.status).toBe(200);
    // The stored 200,000-character message is left out; the latest reply, which fits, is sent.
    const [, sent] = await providerRequests(t.model);
    expect(JSON.stringify(sent.body.messages)).not.toContain(long.slice(0, 1000));
    expect(JSON.stringify(sent.body.messages)).toContain('noted');
    // A provider reporting more than the reservation: charged the reservation, and the log says what was not.
    const third = await call(api.url, 'POST', `/api/v2/conversations/${conv.body.id}/messages`, { key: t.key, body: { input: 'last one' } });
    expect(third.status).toBe(200);
    const logs = (await call(api.url, 'GET', '/api/v2/logs', { key: t.key })).body.data as { run: string; uncharged_credits: number; usage: { total_tokens: number } }[];
    const [ledger] = await rows<{ credits: number }>('SELECT l.credits::int AS credits FROM ledger_lines l JOIN runs r ON r.id = l.run_id WHERE r.public_id = :run', { run: third.body.id });
    const thirdLog = logs.find((l) => l.run === third.body.id)!;
    expect(thirdLog.usage.total_tokens).toBe(1_000_008);
    expect(thirdLog.uncharged_credits).toBe(1_000_008 - ledger.credits);
    expect(ledger.credits).toBeLessThan(1_000_008);
    expect(logs.find((l) => l.run === second.body.id)!.uncharged_credits).toBe(0);
  });

  it('bills the tokens of a provider that reports no usage, counted with the model\'s own tokenizer, plain and streamed, and marks the log entry', async () => {
    const model = `gpt-4o-${Date.now()}`;
    const t = await tenant({ scopes: ['responses:create', 'logs:read'], config: { model } });
    const answer = 'Paris is the capital of France, and its largest city.';
    await scriptModel(model, [{ text: answer, noUsage: true }, { chunks: ['Paris is the capital ', 'of France, and its largest city.'], noUsage: true }]);
    const plain = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'What is the capital of France?' } });
    const streamed = await fetch(`${api.url}/api/v2/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ agent: t.agent, input: 'What is the capital of France?', stream: true }),
    });
    const frames = (await streamed.text()).split('\n\n');
    const completed = frames.find((f) => f.includes('event: response.completed'))!;
    const streamedRun = JSON.parse(completed.slice(completed.indexOf('data:') + 5));
    const expectedOutput = countTokens(answer);
    for (const run of [plain.body, streamedRun]) {
      expect(run.usage.output_tokens).toBe(expectedOutput);
      expect(run.usage.input_tokens).toBeGreaterThan(countTokens('What is the capital of France?'));
      expect(run.usage.total_tokens).toBe(run.usage.input_tokens + run.usage.output_tokens);
      const [ledger] = await rows<{ credits: number }>('SELECT l.credits::int AS credits FROM ledger_lines l JOIN runs r ON r.id = l.run_id WHERE r.public_id = :run', { run: run.id });
      expect(ledger.credits).toBe(run.usage.total_tokens);
    }
    const logs = (await call(api.url, 'GET', '/api/v2/logs', { key: t.key })).body.data;
    expect(logs.map((l: { usage_estimated: boolean }) => l.usage_estimated)).toEqual([true, true]);
  });
});
