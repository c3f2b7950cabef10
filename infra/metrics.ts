import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { OutageMeter } from './dependencyOutages';

/**
 * The API process's Prometheus metrics, served at GET /metrics: one registry, each metric declared
 * once here and counted where its event happens. Labels are bounded (route templates, not paths).
 */
export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: 'aes_api_' });

export const httpRequests = new Counter({
  name: 'aes_http_requests_total',
  help: 'HTTP requests answered, by method, route template and status code.',
  labelNames: ['method', 'route', 'code'] as const,
  registers: [registry],
});

export const httpDuration = new Histogram({
  name: 'aes_http_request_duration_seconds',
  help: 'Time to answer an HTTP request (a stream: until it ends), by method, route template and status code.',
  labelNames: ['method', 'route', 'code'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120],
  registers: [registry],
});

export const runAnswers = new Counter({
  name: 'aes_run_answers_total',
  help: 'Runs the API answered, by status: a JSON answer counts the status the run was in when answered, an event stream the status its terminal event reports.',
  labelNames: ['status'] as const,
  registers: [registry],
});

export const openStreams = new Gauge({
  name: 'aes_sse_open_streams',
  help: 'Event streams this instance is relaying now.',
  registers: [registry],
});

export const awaitedRuns = new Gauge({
  name: 'aes_runs_awaited',
  help: 'Non-streamed requests this instance holds open until their run settles (streamed ones are aes_sse_open_streams).',
  registers: [registry],
});

export const streamReads = new Counter({
  name: 'aes_run_stream_reads_total',
  help: 'Reads of run event streams by the shared reader (each one XREAD over every open stream of one of its connections).',
  registers: [registry],
});

export const idempotentReplays = new Counter({
  name: 'aes_idempotent_replays_total',
  help: 'Requests answered from an earlier request with the same Idempotency-Key, by endpoint.',
  labelNames: ['endpoint'] as const,
  registers: [registry],
});

export const rateLimited = new Counter({
  name: 'aes_rate_limited_total',
  help: 'Requests refused with 429, by the rate-limit dimension that refused them.',
  labelNames: ['dimension'] as const,
  registers: [registry],
});

export const payloadOpenFailures = new Counter({
  name: 'aes_payload_open_failures_total',
  help: 'Temporal payloads this process could not open with PAYLOAD_ENCRYPTION_KEYS (workers count theirs on their own endpoint).',
  registers: [registry],
});

const dependencyUp = new Gauge({
  name: 'aes_dependency_up',
  help: 'Whether this process last found the dependency (postgres, redis, temporal) answering: 0 from a call failing for its absence until one succeeds.',
  labelNames: ['dependency'] as const,
  registers: [registry],
});

const dependencyOutages = new Counter({
  name: 'aes_dependency_outages_total',
  help: 'Outages of a dependency this process saw (each logged once as "dependency unavailable").',
  labelNames: ['dependency'] as const,
  registers: [registry],
});

const dependencyRetries = new Counter({
  name: 'aes_dependency_retries_total',
  help: 'Calls that failed because a dependency could not be reached and were tried again.',
  labelNames: ['dependency'] as const,
  registers: [registry],
});

/** The API's outage meter (infra/dependencyOutages.ts); workers count theirs with the Temporal runtime's. */
export const apiOutageMeter: OutageMeter = {
  up: (dependency, value) => dependencyUp.set({ dependency }, value),
  outage: (dependency) => dependencyOutages.inc({ dependency }),
  retried: (dependency) => dependencyRetries.inc({ dependency }),
};
