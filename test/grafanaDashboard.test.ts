import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as admin from '../admin/commands';
import { resetConfig } from '../infra/config';
import { call, inOneRateWindow, tenant, until, useApi } from './support/stack';

/**
 * The shipped Grafana dashboard (infra/observability/grafana/dashboards) against what the service
 * really exposes: every metric its PromQL names, every label it groups, filters or labels a legend
 * by, must be in the live API's /metrics or the worker's metrics after traffic, so a renamed metric
 * or label fails here instead of leaving an empty panel.
 */
const api = useApi();

const DASHBOARD = JSON.parse(readFileSync(path.join(__dirname, '..', 'infra/observability/grafana/dashboards/agent-execution.json'), 'utf8'));

interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: { refId: string; expr: string; legendFormat?: string; datasource?: { type: string; uid: string } }[];
}
const panels: Panel[] = DASHBOARD.panels.flatMap((p: Panel & { panels?: Panel[] }) => [p, ...(p.panels ?? [])]);
const graphs = panels.filter((p) => p.type !== 'row');
const targets = graphs.flatMap((p) => p.targets ?? []);

/** Series Prometheus makes itself for each target it scrapes, and the labels it adds to every series. */
const PROMETHEUS_SERIES = new Set(['up']);
const TARGET_LABELS = new Set(['instance', 'job']);
const NOT_METRICS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset']);

/** What one PromQL expression uses: metric names, label matchers per metric, and grouping labels. */
function parse(expr: string): { metrics: Set<string>; matchers: { metric: string; label: string; op: string; value: string }[]; grouping: Set<string> } {
  const grouping = new Set<string>();
  for (const m of expr.matchAll(/\b(?:by|without)\s*\(([^)]*)\)/g)) for (const l of m[1].split(',')) if (l.trim()) grouping.add(l.trim());
  const matchers: { metric: string; label: string; op: string; value: string }[] = [];
  for (const m of expr.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}/g)) {
    for (const l of m[2].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"/g)) matchers.push({ metric: m[1], label: l[1], op: l[2], value: l[3] });
  }
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const metrics = new Set<string>();
  // An identifier followed by `(` is a function or an aggregation; numbers do not start with a letter.
  for (const m of bare.matchAll(/(?<![\w:.$])([a-zA-Z_:][a-zA-Z0-9_:]*)(?![\w:])(?!\s*\()/g)) if (!NOT_METRICS.has(m[1])) metrics.add(m[1]);
  return { metrics, matchers, grouping };
}

/** Each series name in an exposition, with every label name and value its samples carry. */
function exposed(text: string): Map<string, Map<string, Set<string>>> {
  const names = new Map<string, Map<string, Set<string>>>();
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+\S+/.exec(line);
    if (!m) continue;
    const labels = names.get(m[1]) ?? new Map<string, Set<string>>();
    names.set(m[1], labels);
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      if (!labels.has(l[1])) labels.set(l[1], new Set());
      labels.get(l[1])!.add(l[2]);
    }
  }
  return names;
}

describe('the Grafana dashboard', () => {
  it('is a Grafana dashboard templated on its Prometheus data source, panels laid out without overlap', () => {
    expect(DASHBOARD).toMatchObject({ uid: 'agent-execution', title: expect.any(String), schemaVersion: expect.any(Number) });
    expect(DASHBOARD.templating.list).toContainEqual(expect.objectContaining({ name: 'datasource', type: 'datasource', query: 'prometheus' }));
    expect(new Set(panels.map((p) => p.id)).size).toBe(panels.length);
    expect(graphs.length).toBeGreaterThanOrEqual(8);
    for (const p of graphs) {
      expect(p.datasource).toEqual({ type: 'prometheus', uid: '${datasource}' });
      expect(p.targets?.length).toBeGreaterThan(0);
      for (const t of p.targets!) {
        expect(t.datasource ?? p.datasource).toEqual({ type: 'prometheus', uid: '${datasource}' });
        expect(t.expr.trim()).not.toBe('');
      }
      expect(new Set(p.targets!.map((t) => t.refId)).size).toBe(p.targets!.length);
    }
    const cells = new Set<string>();
    for (const { gridPos: g, title } of panels) {
      expect(g.x + g.w).toBeLessThanOrEqual(24);
      for (let x = g.x; x < g.x + g.w; x++) {
        for (let y = g.y; y < g.y + g.h; y++) {
          if (cells.has(`${x},${y}`)) throw new Error(`panel "${title}" overlaps another at ${x},${y}`);
          cells.add(`${x},${y}`);
        }
      }
    }
  });

  it('charts the API, the scaling rule and the processes', () => {
    const used = new Set(targets.flatMap((t) => [...parse(t.expr).metrics]));
    for (const metric of [
      'aes_http_requests_total', 'aes_http_request_duration_seconds_bucket', 'aes_run_answers_total', 'aes_sse_open_streams',
      'aes_idempotent_replays_total', 'aes_rate_limited_total', 'aes_webhook_attempts_total',
      'temporal_workflow_task_schedule_to_start_latency_bucket', 'temporal_activity_schedule_to_start_latency_bucket', 'temporal_worker_task_slots_available',
      'aes_api_process_cpu_seconds_total', 'aes_api_process_resident_memory_bytes',
    ]) {
      expect(used).toContain(metric);
    }
    // The 5xx panel and the per-queue latency panels group as the questions in docs/operations.md (Metrics) need.
    expect(targets.some((t) => /code=~"5\.\."/.test(t.expr))).toBe(true);
    for (const kind of ['workflow_task', 'activity']) {
      expect(targets.some((t) => t.expr.includes(`histogram_quantile(0.95, sum by (task_queue, le) (rate(temporal_${kind}_schedule_to_start_latency_bucket`))).toBe(true);
    }
    expect(targets.some((t) => /sum by \(task_queue, worker_type\) \(temporal_worker_task_slots_available\)/.test(t.expr))).toBe(true);
  });

  it('names only metrics and labels the API and the worker expose after a run', async () => {
    // Traffic that makes every series the dashboard reads appear: a run whose completion is delivered
    // to a webhook endpoint, an idempotent replay and a 429.
    const receiver = createServer((req, res) => req.resume().on('end', () => res.writeHead(204).end()));
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    let workerText: string;
    try {
      const partner = await admin.createPartner({ name: 'dashboard' });
      const key = (await admin.createPartnerKey({ partner: partner.id, scopes: 'webhooks:write,agents:read' })).key;
      const ws = await admin.createWorkspace({ name: 'd', credits: 1_000_000, partner: partner.id, tenantRef: `d-${partner.id}` });
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      expect((await call(api.url, 'POST', '/api/v1/partner/webhooks/endpoints/', { key, body: { url, enabled_events: ['agent.run.completed'] } })).status).toBe(201);
      const runKey = (await admin.createWorkspaceKey({ workspace: ws.id, scopes: 'responses:create' })).key;
      const agent = await admin.createAgent({ workspace: ws.id, name: 'a' });
      const headers = { 'Idempotency-Key': `dashboard-${ws.id}` };
      expect((await call(api.url, 'POST', '/api/v2/responses', { key: runKey, body: { agent: agent.id, input: 'hi' }, headers })).status).toBe(200);
      expect((await call(api.url, 'POST', '/api/v2/responses', { key: runKey, body: { agent: agent.id, input: 'hi' }, headers })).headers.get('idempotency-replayed')).toBe('true');
      // The exporter refreshes about once a second.
      workerText = await until(async () => {
        const body = await (await fetch(process.env.TEST_WORKER_METRICS_URL!)).text();
        return /aes_webhook_attempts_total\{[^}]*outcome="delivered"/.test(body) ? body : undefined;
      }, 'a delivered webhook attempt in the worker metrics');
    } finally {
      receiver.close();
    }
    const limited = await tenant();
    process.env.RATE_LIMIT_CREDENTIAL = '1';
    resetConfig();
    try {
      const second = await inOneRateWindow(async () => {
        await call(api.url, 'POST', '/api/v2/responses', { key: limited.key, body: { agent: limited.agent, input: 'hi' } });
        return call(api.url, 'POST', '/api/v2/responses', { key: limited.key, body: { agent: limited.agent, input: 'hi' } });
      });
      expect(second.status).toBe(429);
    } finally {
      delete process.env.RATE_LIMIT_CREDENTIAL;
      resetConfig();
    }
    const apiText = await (await fetch(`${api.url}/metrics`)).text();
    const series = new Map([...exposed(apiText), ...exposed(workerText)]);

    const problems: string[] = [];
    for (const panel of graphs) {
      for (const target of panel.targets!) {
        const { metrics, matchers, grouping } = parse(target.expr);
        const where = `"${panel.title}" ${target.refId}`;
        expect(metrics.size).toBeGreaterThan(0);
        const real = [...metrics].filter((m) => !PROMETHEUS_SERIES.has(m));
        for (const metric of real) if (!series.has(metric)) problems.push(`${where}: ${metric} is not exposed`);
        for (const label of grouping) {
          if (TARGET_LABELS.has(label)) continue;
          for (const metric of real) if (series.has(metric) && !series.get(metric)!.has(label)) problems.push(`${where}: ${metric} has no label ${label}`);
        }
        for (const { metric, label, op, value } of matchers) {
          if (PROMETHEUS_SERIES.has(metric) || TARGET_LABELS.has(label) || !series.has(metric)) continue;
          const values = series.get(metric)!.get(label);
          if (!values) problems.push(`${where}: ${metric} has no label ${label}`);
          else if (op === '=' && !values.has(value)) problems.push(`${where}: ${metric} has no ${label}="${value}" (has ${[...values].join(', ')})`);
        }
        // A legend names the labels the query keeps: those it groups by, or, ungrouped, the metric's own.
        for (const [, label] of (target.legendFormat ?? '').matchAll(/\{\{\s*(\w+)\s*\}\}/g)) {
          const kept = grouping.size ? grouping.has(label) : TARGET_LABELS.has(label) || real.every((m) => series.get(m)?.has(label));
          if (!kept) problems.push(`${where}: the legend's {{${label}}} is not a label of the result`);
        }
      }
    }
    expect(problems).toEqual([]);
  });
});
