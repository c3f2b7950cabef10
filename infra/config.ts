import { readFileSync } from 'node:fs';
import os from 'node:os';
import { API_WAIT_GRACE_MS, WORKER_SHUTDOWN_GRACE_MS } from '../domain/timings';
import { DEFAULT_MAX_MODEL_CALLS, DEFAULT_MODEL_CALLS_CEILING } from '../domain/limits';
import { temporalConnectionOptions, type TemporalConnectionOptions } from './temporalConnection';
import { modelProvidersFrom, type ModelProviders } from './modelProviders';

/** The operator contract's environment variables (DESIGN.md §3), read once with their defaults. */
function int(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return value;
}

function str(name: string, fallback: string): string {
  const raw = process.env[name];
  return raw === undefined || raw === '' ? fallback : raw;
}

/** What SIGNING_SECRET is when unset: anyone who reads this file could sign a document grant with it. */
export const DEVELOPMENT_SIGNING_SECRET = 'dev-signing-secret-change-me';

function flag(name: string): boolean {
  return ['1', 'true', 'yes', 'on'].includes(str(name, '').toLowerCase());
}

function documentStorage(): 'postgres' | 's3' {
  const value = str('DOCUMENT_STORAGE', 'postgres');
  if (value !== 'postgres' && value !== 's3') throw new Error(`DOCUMENT_STORAGE must be postgres or s3, got "${value}"`);
  return value;
}

function oneOf<T extends string>(name: string, values: readonly T[], fallback: T): T {
  const value = str(name, fallback);
  if (!(values as readonly string[]).includes(value)) throw new Error(`${name} must be one of ${values.join(', ')}, got "${value}"`);
  return value as T;
}

/** Spec: attempts immediately, then 60 s, 5 min and 30 min after the first; tests shorten them. */
function retryDelays(): number[] {
  const raw = str('WEBHOOK_RETRY_DELAYS_MS', '60000,300000,1800000');
  const delays = raw.split(',').map((s) => Number(s.trim()));
  if (delays.some((d) => !Number.isInteger(d) || d < 0) || delays.some((d, i) => i > 0 && d < delays[i - 1])) {
    throw new Error(`WEBHOOK_RETRY_DELAYS_MS must be ascending non-negative integers (ms after the first attempt), got "${raw}"`);
  }
  return delays;
}

/** WORKER_* capacity settings (docs/operations.md, Scaling): cached runs never fewer than the runs in flight. */
function workerCapacity(): Config['worker'] {
  const inflightRuns = Math.max(1, int('WORKER_MAX_INFLIGHT_RUNS', 1000));
  return {
    inflightRuns,
    workflowTasks: Math.max(2, int('WORKER_MAX_WORKFLOW_TASKS', 40)),
    cachedRuns: Math.max(inflightRuns, int('WORKER_MAX_CACHED_RUNS', inflightRuns * 2)),
    backgroundActivities: Math.max(1, int('WORKER_MAX_BACKGROUND_ACTIVITIES', 100)),
    webhookActivities: Math.max(1, int('WORKER_MAX_WEBHOOK_ACTIVITIES', 200)),
  };
}

/** RUN_MODEL_CALLS_DEFAULT and RUN_MODEL_CALLS_MAX: at least one call each, and the default never above the ceiling. */
function runLimitsConfig(): Config['runLimits'] {
  const modelCallsCeiling = Math.max(1, int('RUN_MODEL_CALLS_MAX', DEFAULT_MODEL_CALLS_CEILING));
  return { defaultModelCalls: Math.min(modelCallsCeiling, Math.max(1, int('RUN_MODEL_CALLS_DEFAULT', DEFAULT_MAX_MODEL_CALLS))), modelCallsCeiling };
}

export interface Config {
  port: number;
  databaseUrl: string;
  redisUrl: string;
  /** Address, TLS and API key (TEMPORAL_ADDRESS, TEMPORAL_TLS_*, TEMPORAL_API_KEY). */
  temporal: TemporalConnectionOptions;
  temporalNamespace: string;
  modelProvider: 'local' | 'openai';
  modelBaseUrl: string | undefined;
  modelApiKey: string;
  /** MODEL_PROVIDERS, or the one provider `default` of MODEL_BASE_URL and MODEL_API_KEY (infra/modelProviders.ts). */
  modelProviders: ModelProviders;
  /** How structured output is asked of an OpenAI-compatible provider (activities/providers/openai.ts). */
  modelStructuredOutput: 'auto' | 'json_schema' | 'json_object';
  /** The model's context window in tokens (MODEL_CONTEXT_TOKENS); unset, it is asked of the provider (infra/modelWindow.ts). */
  modelContextTokens: number | undefined;
  /** A GBNF grammar sent as llama.cpp's `grammar` in place of json_object (MODEL_JSON_OBJECT_GRAMMAR names its file). */
  modelJsonObjectGrammar: string | undefined;
  signingSecret: string;
  publicBaseUrl: string;
  sseKeepaliveMs: number;
  rateLimits: { credential: number; tenant: number; tenantEndpoint: number; agent: number; principal: number };
  /** Model calls a run makes at most when its agent sets no max_model_calls, and the most an agent may set (domain/limits.ts). */
  runLimits: { defaultModelCalls: number; modelCallsCeiling: number };
  webhookAllowPrivateTargets: boolean;
  mcpAllowedOrigins: string[];
  logLevel: string;
  /** How long a SIGTERMed worker lets in-flight activities finish before cancelling them. */
  workerShutdownGraceMs: number;
  /** The API process also runs an agent-runs worker on its client's connection, so runs start eagerly (docs/performance.md, "Eager dispatch"). */
  runsInApi: boolean;
  /** On SIGTERM the API fails readiness, waits this long for the load balancer to notice, then stops listening. */
  shutdownDelayMs: number;
  /** Then in-flight requests get this long to finish. */
  shutdownGraceMs: number;
  /** A non-streamed request waits for its run at most timeout_ms plus this, then answers 202. */
  apiWaitGraceMs: number;
  /**
   * Proxies in front of the API that append to X-Forwarded-For (0: none, the header is ignored and
   * the client address is the socket's). Per-address limits key on that address.
   */
  trustProxyHops: number;
  /** Failed authentications a client address may make per 60 s before it is refused (0: unlimited). */
  authFailureLimit: number;
  /** The window AUTH_FAILURE_LIMIT counts in, and how long an address that passed it is refused, in ms. */
  authFailureWindowMs: number;
  /** Schedules one workspace may have (SCHEDULES_PER_WORKSPACE), and firings in a row that could not run after which one pauses itself. */
  schedules: { perWorkspace: number; pauseAfterFailures: number };
  /** `kid:base64key,…` (the first encrypts); unset: a development key derived from SIGNING_SECRET. */
  payloadEncryptionKeys: string | undefined;
  /** Where a worker serves its Prometheus metrics (Temporal's SDK metrics and the activities'); unset, nowhere. */
  workerMetricsPort: number | undefined;
  /** The bearer token GET /metrics requires; unset, metrics are off (open in development mode). */
  metricsToken: string | undefined;
  /**
   * DEVELOPMENT_MODE (`npm start`, the tests): development secrets are let through with a warning and
   * metrics are served without METRICS_TOKEN. Off, the processes refuse weak secrets (infra/startupChecks.ts).
   */
  developmentMode: boolean;
  /** The bearer token the codec endpoint requires; unset, the endpoint is off. */
  codecOperatorToken: string | undefined;
  /** PostgreSQL connections per process. */
  dbPoolMax: number;
  /**
   * What one worker process holds at once: model and tool calls in flight on agent-runs (activity
   * slots; the calls wait on a provider, so thousands fit), workflow tasks (CPU: a few), and run
   * workflows kept in memory between their tasks (at least the calls in flight, so none is evicted
   * and replayed while it waits for its provider).
   */
  worker: { inflightRuns: number; workflowTasks: number; cachedRuns: number; backgroundActivities: number; webhookActivities: number };
  /** How long a stateless run's event stream is kept after its terminal event. */
  statelessStreamTtlS: number;
  /** Browser origins (a Temporal UI) allowed to call the codec endpoint. */
  codecAllowedOrigins: string[];
  /** The Temporal UI operators use: the dashboard's run page links a run's workflow there (owners only). */
  temporalUiUrl: string | undefined;
  /** Parsing a document read whole (PDF, DOCX, HTML): a process of its own under these limits, so many at once per worker (activities/extract.ts). */
  parse: { memoryMb: number; cpuS: number; concurrency: number };
  /** Documents: where new uploads are stored, the size bound, each workspace's quota, and how long transfer grants last. */
  documents: {
    storage: 'postgres' | 's3';
    maxBytes: number;
    /** The bytes a workspace's documents may declare in all (uploaded or awaiting their bytes). */
    quotaBytes: number;
    uploadGrantTtlS: number;
    downloadGrantTtlS: number;
  };
  /** Partner webhooks: when attempts come after the first, the default delivery rate, when an always-failing endpoint is disabled. */
  webhooks: { retryDelaysMs: number[]; partnerRate: number; disableAfterS: number };
  /** The S3-compatible backend (credentials come from the AWS SDK's usual chain, AWS_ACCESS_KEY_ID and so on). */
  s3: { bucket: string; region: string; endpoint: string | undefined; forcePathStyle: boolean };
}

export function loadConfig(): Config {
  const provider = str('MODEL_PROVIDER', 'local');
  const modelProviders = modelProvidersFrom(process.env);
  if (provider !== 'local' && provider !== 'openai') throw new Error(`MODEL_PROVIDER must be local or openai, got "${provider}"`);
  const port = int('PORT', 8080);
  return {
    port,
    databaseUrl: str('DATABASE_URL', 'postgres://postgres@127.0.0.1:5432/agent_execution'),
    redisUrl: str('REDIS_URL', 'redis://127.0.0.1:6379'),
    temporal: temporalConnectionOptions(),
    temporalNamespace: str('TEMPORAL_NAMESPACE', 'default'),
    // Declared providers are OpenAI-compatible; the first is the one asked for the model's window (infra/modelWindow.ts).
    modelProvider: modelProviders.declared ? 'openai' : provider,
    modelBaseUrl: modelProviders.declared ? modelProviders.providers[0].baseUrl : process.env.MODEL_BASE_URL || undefined,
    modelApiKey: modelProviders.declared ? modelProviders.providers[0].apiKey : str('MODEL_API_KEY', 'unset'),
    modelProviders,
    modelStructuredOutput: oneOf('MODEL_STRUCTURED_OUTPUT', ['auto', 'json_schema', 'json_object'] as const, 'auto'),
    modelContextTokens: process.env.MODEL_CONTEXT_TOKENS ? Math.max(256, int('MODEL_CONTEXT_TOKENS', 0)) : undefined,
    modelJsonObjectGrammar: process.env.MODEL_JSON_OBJECT_GRAMMAR ? readFileSync(process.env.MODEL_JSON_OBJECT_GRAMMAR, 'utf8') : undefined,
    signingSecret: str('SIGNING_SECRET', DEVELOPMENT_SIGNING_SECRET),
    publicBaseUrl: str('PUBLIC_BASE_URL', `http://127.0.0.1:${port}`),
    sseKeepaliveMs: int('SSE_KEEPALIVE_MS', 15000),
    rateLimits: {
      credential: int('RATE_LIMIT_CREDENTIAL', 900),
      tenant: int('RATE_LIMIT_TENANT', 300),
      tenantEndpoint: int('RATE_LIMIT_TENANT_ENDPOINT', 300),
      agent: int('RATE_LIMIT_AGENT', 300),
      principal: int('RATE_LIMIT_PRINCIPAL', 60),
    },
    runLimits: runLimitsConfig(),
    webhookAllowPrivateTargets: flag('WEBHOOK_ALLOW_PRIVATE_TARGETS'),
    mcpAllowedOrigins: str('MCP_ALLOWED_ORIGINS', '').split(',').map((s) => s.trim()).filter(Boolean),
    logLevel: str('LOG_LEVEL', 'info'),
    workerShutdownGraceMs: int('WORKER_SHUTDOWN_GRACE_MS', WORKER_SHUTDOWN_GRACE_MS),
    runsInApi: flag('RUNS_IN_API'),
    shutdownDelayMs: int('SHUTDOWN_DELAY_MS', 5_000),
    shutdownGraceMs: int('SHUTDOWN_GRACE_MS', 30_000),
    apiWaitGraceMs: int('API_WAIT_GRACE_MS', API_WAIT_GRACE_MS),
    authFailureLimit: int('AUTH_FAILURE_LIMIT', 60),
    authFailureWindowMs: Math.max(1, int('AUTH_FAILURE_WINDOW_S', 60)) * 1000,
    schedules: { perWorkspace: Math.max(0, int('SCHEDULES_PER_WORKSPACE', 25)), pauseAfterFailures: Math.max(1, int('SCHEDULE_PAUSE_AFTER_FAILURES', 5)) },
    trustProxyHops: int('TRUST_PROXY_HOPS', 0),
    payloadEncryptionKeys: process.env.PAYLOAD_ENCRYPTION_KEYS || undefined,
    codecOperatorToken: process.env.CODEC_OPERATOR_TOKEN || undefined,
    metricsToken: process.env.METRICS_TOKEN || undefined,
    developmentMode: flag('DEVELOPMENT_MODE'),
    workerMetricsPort: process.env.WORKER_METRICS_PORT ? int('WORKER_METRICS_PORT', 0) : undefined,
    statelessStreamTtlS: int('STATELESS_STREAM_TTL_S', 300),
    dbPoolMax: Math.max(1, int('DB_POOL_MAX', 20)),
    worker: workerCapacity(),
    temporalUiUrl: process.env.TEMPORAL_UI_URL?.replace(/\/+$/, '') || undefined,
    codecAllowedOrigins: str('CODEC_ALLOWED_ORIGINS', '').split(',').map((s) => s.trim()).filter(Boolean),
    // pdf.js alone reserves about 1.1 GB of address space before it reads a byte.
    parse: {
      memoryMb: Math.max(1152, int('PARSE_MEMORY_MB', 1536)),
      cpuS: Math.max(1, int('PARSE_CPU_S', 60)),
      concurrency: Math.max(1, int('PARSE_CONCURRENCY', os.availableParallelism())),
    },
    documents: {
      storage: documentStorage(),
      maxBytes: int('DOCUMENT_MAX_BYTES', 100 * 1024 * 1024),
      quotaBytes: int('DOCUMENT_STORAGE_QUOTA_BYTES', 10 * 1024 * 1024 * 1024),
      uploadGrantTtlS: int('DOCUMENT_UPLOAD_TTL_S', 3600),
      downloadGrantTtlS: int('DOCUMENT_DOWNLOAD_TTL_S', 900),
    },
    webhooks: {
      retryDelaysMs: retryDelays(),
      partnerRate: Math.max(1, int('WEBHOOK_PARTNER_RATE', 50)),
      disableAfterS: int('WEBHOOK_DISABLE_AFTER_S', 5 * 24 * 3600),
    },
    s3: {
      bucket: str('S3_BUCKET', 'agent-execution-documents'),
      region: str('S3_REGION', 'us-east-1'),
      endpoint: process.env.S3_ENDPOINT || undefined,
      forcePathStyle: flag('S3_FORCE_PATH_STYLE'),
    },
  };
}

let cached: Config | undefined;

/** Process-wide configuration; tests that change the environment call resetConfig(). */
export function config(): Config {
  cached ??= loadConfig();
  return cached;
}

/** Whether this process serves its metrics: with METRICS_TOKEN set, or in development mode. */
export function metricsServed(c: Config = config()): boolean {
  return c.metricsToken !== undefined || c.developmentMode;
}

export function resetConfig(): void {
  cached = undefined;
}
