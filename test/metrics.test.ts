import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as admin from '../admin/commands';
import { resetConfig } from '../infra/config';
import { call, callsHeld, releaseHeld, scriptModel, tenant, until, useApi } from './support/stack';
import { frames, openStream } from './support/sse';

const api = useApi();

/** One sample's value from the exposition text, or 0 when the series is absent. */
async function sample(series: string, headers: Record<string, string> = {}): Promise<number> {
  const res = await fetch(`${api.url}/metrics`, { headers });
  const line = (await res.text()).split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

describe('GET /metrics', () => {
  it('counts requests by route template and code, runs by status, replays, open streams and 429s by dimension', async () => {
    const t = await tenant();
    const route = (code: number) => `aes_http_requests_total{method="POST",route="/api/v2/responses",code="${code}"}`;
    const before = { ok: await sample(route(200)), completed: await sample('aes_run_answers_total{status="completed"}'), replays: await sample('aes_idempotent_replays_total{endpoint="responses"}') };

    const headers = { 'Idempotency-Key': `metrics-${t.workspace}` };
    expect((await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'hi' }, headers })).status).toBe(200);
    expect((await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'hi' }, headers })).headers.get('idempotency-replayed')).toBe('true');
    expect(await sample(route(200))).toBe(before.ok + 2);
    expect(await sample('aes_run_answers_total{status="completed"}')).toBe(before.completed + 1);
    expect(await sample('aes_idempotent_replays_total{endpoint="responses"}')).toBe(before.replays + 1);
    // A path no route has is counted as `unmatched`, never under its own (a prober's) path.
    await call(api.url, 'GET', `/no/such/${t.workspace}`);
    expect(await (await fetch(`${api.url}/metrics`)).text()).not.toContain(t.workspace);

    // An event stream is open while it is relayed.
    await scriptModel(t.model, [{ chunks: ['slow ', 'answer'], hold: true }]);
    const stream = frames(await openStream(api.url, '/api/v2/responses', t.key, { agent: t.agent, input: 'hi', stream: true }));
    await stream.next();
    try {
      await callsHeld(t.model, 1, 'the model call');
      expect(await sample('aes_sse_open_streams')).toBe(1);
    } finally {
      await releaseHeld(t.model);
    }
    for await (const frame of stream) void frame;
    expect(await sample('aes_sse_open_streams')).toBe(0);
    // A streamed run counts too, with the status its terminal event reports.
    expect(await sample('aes_run_answers_total{status="completed"}')).toBe(before.completed + 2);

    // Past a limit: the 429 is counted under the dimension that refused it.
    const limited = await tenant();
    process.env.RATE_LIMIT_CREDENTIAL = '1';
    resetConfig();
    try {
      const before429 = await sample('aes_rate_limited_total{dimension="credential"}');
      // One request per fixed 60 s window: of three in a row two share a window, even when one crosses its end.
      const statuses: number[] = [];
      while (statuses.length < 3 && !statuses.includes(429)) statuses.push((await call(api.url, 'POST', '/api/v2/responses', { key: limited.key, body: { agent: limited.agent, input: 'hi' } })).status);
      expect(statuses).toContain(429);
      expect(await sample('aes_rate_limited_total{dimension="credential"}')).toBe(before429 + 1);
    } finally {
      delete process.env.RATE_LIMIT_CREDENTIAL;
      resetConfig();
    }
  });

  it('is off (501) without METRICS_TOKEN outside development mode, and open in it (the test stack runs in it)', async () => {
    expect(process.env.DEVELOPMENT_MODE).toBe('1');
    expect((await fetch(`${api.url}/metrics`)).status).toBe(200);
    delete process.env.DEVELOPMENT_MODE;
    resetConfig();
    try {
      const off = await fetch(`${api.url}/metrics`);
      expect(off.status).toBe(501);
      const body = (await off.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('not_implemented');
      expect(body.error.message).toContain('METRICS_TOKEN');
      // With a token it is served again, to its holder only.
      process.env.METRICS_TOKEN = 'scrape-me';
      resetConfig();
      expect((await fetch(`${api.url}/metrics`)).status).toBe(401);
      expect((await fetch(`${api.url}/metrics`, { headers: { authorization: 'Bearer scrape-me' } })).status).toBe(200);
    } finally {
      process.env.DEVELOPMENT_MODE = '1';
      delete process.env.METRICS_TOKEN;
      resetConfig();
    }
  });

  it('asks for METRICS_TOKEN when one is set', async () => {
    process.env.METRICS_TOKEN = 'scrape-me';
    resetConfig();
    try {
      expect((await fetch(`${api.url}/metrics`)).status).toBe(401);
      expect((await fetch(`${api.url}/metrics`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
      const ok = await fetch(`${api.url}/metrics`, { headers: { authorization: 'Bearer scrape-me' } });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('content-type')).toContain('text/plain');
      expect(await ok.text()).toContain('aes_api_process_cpu_user_seconds_total');
    } finally {
      delete process.env.METRICS_TOKEN;
      resetConfig();
    }
  });
});

describe("the worker's metrics", () => {
  it("serve Temporal's SDK metrics, webhook attempts by outcome and model calls' start lag on WORKER_METRICS_PORT", async () => {
    const receiver = createServer((req, res) => req.resume().on('end', () => res.writeHead(204).end()));
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const partner = await admin.createPartner({ name: 'metrics' });
      const key = (await admin.createPartnerKey({ partner: partner.id, scopes: 'webhooks:write,agents:read' })).key;
      const ws = await admin.createWorkspace({ name: 'm', credits: 1_000_000, partner: partner.id, tenantRef: `m-${partner.id}` });
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      expect((await call(api.url, 'POST', '/api/v1/partner/webhooks/endpoints/', { key, body: { url, enabled_events: ['agent.run.completed'] } })).status).toBe(201);
      const runKey = (await admin.createWorkspaceKey({ workspace: ws.id, scopes: 'responses:create' })).key;
      const agent = await admin.createAgent({ workspace: ws.id, name: 'a' });
      expect((await call(api.url, 'POST', '/api/v2/responses', { key: runKey, body: { agent: agent.id, input: 'hi' } })).status).toBe(200);
      // The exporter refreshes about once a second.
      const text = await until(async () => {
        const body = await (await fetch(process.env.TEST_WORKER_METRICS_URL!)).text();
        return /aes_webhook_attempts_total\{[^}]*outcome="delivered"/.test(body) ? body : undefined;
      }, 'a delivered webhook attempt in the worker metrics');
      expect(text).toMatch(/temporal_activity_schedule_to_start_latency_bucket\{[^}]*task_queue="webhooks"/);
      // Buckets fine enough below 100 ms for the scaling rule (the SDK's own start at 0.1 s).
      expect(text).toMatch(/temporal_workflow_task_schedule_to_start_latency_bucket\{[^}]*le="0.025"/);
      expect(text).toMatch(/temporal_worker_task_slots_available\{[^}]*task_queue="agent-runs"/);
      // The run's call was dispatched eagerly: its wait shows here, in buckets as fine as schedule-to-start's.
      expect(text).toMatch(/aes_model_call_start_lag_seconds_bucket\{[^}]*le="0.025"/);
      expect(text).toMatch(/aes_model_call_start_lag_seconds_count(\{[^}]*\})? [1-9]/);
    } finally {
      receiver.close();
    }
  });

  it("serve the GenAI conventions' client metrics: tokens by type, each call's duration and a stream's first chunk, by provider and model", async () => {
    const t = await tenant();
    await scriptModel(t.model, [{ chunks: ['one ', 'two'], usage: { prompt_tokens: 21, completion_tokens: 2 } }]);
    const stream = frames(await openStream(api.url, '/api/v2/responses', t.key, { agent: t.agent, input: 'hi', stream: true }));
    for await (const frame of stream) void frame;
    const labels = `gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="${t.model}",gen_ai_response_model="${t.model}"`;
    const series = (name: string) => new RegExp(`^${name}\\{([^}]*)\\} (\\S+)$`, 'gm');
    // The exporter refreshes about once a second.
    const text = await until(async () => {
      const body = await (await fetch(process.env.TEST_WORKER_METRICS_URL!)).text();
      return body.includes(t.model) && /gen_ai_client_operation_time_to_first_chunk/.test(body) ? body : undefined;
    }, "the run's call in the worker metrics");
    const value = (name: string, extra = '') => [...text.matchAll(series(name))].find((m) => m[1].includes(labels) && m[1].includes(extra))?.[2];
    expect(value('gen_ai_client_token_usage_sum', 'gen_ai_token_type="input"')).toBe('21');
    expect(value('gen_ai_client_token_usage_sum', 'gen_ai_token_type="output"')).toBe('2');
    expect(value('gen_ai_client_operation_duration_count')).toBe('1');
    expect(value('gen_ai_client_operation_time_to_first_chunk_count')).toBe('1');
    // The conventions' buckets.
    expect(text).toMatch(/gen_ai_client_token_usage_bucket\{[^}]*le="16384"/);
    expect(text).toMatch(/gen_ai_client_operation_duration_bucket\{[^}]*le="0.64"/);
  });
});
