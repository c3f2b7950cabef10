import { DefaultLogger, NativeConnection, Runtime, Worker, type LogLevel, type WorkerOptions } from '@temporalio/worker';
import { OpenTelemetryActivityInboundInterceptor } from '@temporalio/interceptors-opentelemetry';
import { ContentHeaderInterceptor } from '../infra/genaiContent';
import { GENAI_BUCKETS } from '../activities/providers/genaiMetrics';
import * as activities from '../activities';
import { closeMcpSessions } from '../infra/mcpSessions';
import { MODEL_CALL_START_LAG } from '../activities/model';
import { config, metricsServed } from '../infra/config';
import { logger } from '../infra/logger';
import { QUEUES, TASK_QUEUES, type TaskQueue } from '../workflowClients/registry';
import { workflowBundle, workflowSinks } from './workflowBundle';
import { dataConverter } from '../infra/payloadCodec';
import { CANCEL_CONFIRM_FIRST_MS } from '../domain/timings';
import { countUnopenableWith, reportUnopenable } from '../infra/unopenablePayloads';
import { resealEndpointSecrets } from '../db/webhookEndpoints';
import { resealWorkspaceSecrets } from '../db/workspaceSecrets';
import { setOutageMeter, type OutageMeter } from '../infra/dependencyOutages';
import { temporal } from '../infra/temporalClient';
import { ensureReconcileSchedule } from '../workflowClients/reconcileRuns.client';
import { ensureOutboxDispatcher } from '../workflowClients/outboxDispatcher.client';
import { dispatching } from '../activities/outbox';

export interface RunningWorkers {
  workers: Worker[];
  /** Resolves when every worker has stopped (after shutdown() or a fatal error). */
  done: Promise<void>;
  shutdown(): Promise<void>;
}

let runtimeInstalled = false;

const PINO_LEVEL: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = { TRACE: 'trace', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' };

/**
 * Routes the SDK's own log lines into the service's JSON logs, at warning level and above, and with
 * WORKER_METRICS_PORT set serves the SDK's metrics (schedule-to-start latency per queue, free slots,
 * …) and the activities' own (webhook attempts by outcome) for Prometheus on that port (once per process),
 * when metrics are served at all: with METRICS_TOKEN set (the port itself checks no token: keep it
 * private) or in DEVELOPMENT_MODE.
 */
export function installRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  const port = metricsServed() ? config().workerMetricsPort : undefined;
  countUnopenableWith(() => Runtime.instance().metricMeter.createCounter('aes_payload_open_failures', 'payloads', 'Temporal payloads this worker could not open with PAYLOAD_ENCRYPTION_KEYS.').add(1));
  setOutageMeter(workerOutageMeter());
  Runtime.install({
    logger: new DefaultLogger('WARN', (entry) => logger[PINO_LEVEL[entry.level]]({ ...entry.meta, sdk: 'temporal' }, entry.message)),
    ...(port !== undefined && {
      telemetryOptions: {
        metrics: {
          prometheus: {
            bindAddress: `0.0.0.0:${port}`,
            countersTotalSuffix: true,
            useSecondsForDurations: true,
            // The scaling rule reads schedule-to-start against 100 ms: the SDK's default buckets start at 0.1 s.
            histogramBucketOverrides: {
              workflow_task_schedule_to_start_latency: SCHEDULE_TO_START_BUCKETS,
              activity_schedule_to_start_latency: SCHEDULE_TO_START_BUCKETS,
              [MODEL_CALL_START_LAG]: SCHEDULE_TO_START_BUCKETS,
              // The GenAI conventions' advised buckets.
              ...GENAI_BUCKETS,
            },
          },
        },
      },
    }),
  });
}

/** The worker's outage meter (infra/dependencyOutages.ts), on the runtime's meter like the SDK's own metrics. */
function workerOutageMeter(): OutageMeter {
  const meter = () => Runtime.instance().metricMeter;
  return {
    up: (dependency, value) => meter().createGauge('aes_dependency_up', 'int', '', 'Whether this worker last found the dependency answering.').set(value, { dependency }),
    outage: (dependency) => meter().createCounter('aes_dependency_outages', 'outages', 'Outages of a dependency this worker saw.').add(1, { dependency }),
    retried: (dependency) => meter().createCounter('aes_dependency_retries', 'calls', 'Steps that failed because a dependency could not be reached and were tried again.').add(1, { dependency }),
  };
}

/**
 * Endpoint secrets sealed at rest with an older key are sealed anew with the active one at each start
 * of a delivering worker, so a key can leave the ring once a worker has started with the new key
 * first (docs/operations.md, "Keys and the codec endpoint"). Secrets no key of the ring opens are
 * loud: their deliveries cannot be signed until that key is back.
 */
async function resealAtRest(): Promise<void> {
  try {
    const { resealed, unopenable, lostPrevious } = await resealEndpointSecrets();
    if (resealed > 0) logger.info({ resealed }, 'webhook endpoint secrets re-sealed under the active payload key');
    // Their current secrets sign: what is lost is a rotated-out one, said, not alarmed on.
    if (lostPrevious.length > 0) logger.warn({ endpoints: lostPrevious.slice(0, 20), count: lostPrevious.length }, 'webhook endpoint secrets rotated out cannot be opened with PAYLOAD_ENCRYPTION_KEYS: they are lost and dropped; deliveries are signed with the current secrets');
    if (unopenable.length > 0) {
      reportUnopenable(
        new Error(`the secrets of ${unopenable.length} webhook endpoint(s) were sealed with a key PAYLOAD_ENCRYPTION_KEYS no longer holds: ${unopenable.slice(0, 20).join(', ')}`),
        'webhook endpoint secrets cannot be opened with PAYLOAD_ENCRYPTION_KEYS: their deliveries cannot be signed until the key that sealed them is back in the ring (after the active one), or their secrets are rotated',
      );
    }
  } catch (err) {
    logger.error({ err }, 'webhook endpoint secrets could not be re-sealed: the next worker start tries again');
  }
  // Workspace secrets (the credentials agents' tools send) likewise.
  try {
    const { resealed, unopenable } = await resealWorkspaceSecrets();
    if (resealed > 0) logger.info({ resealed }, 'workspace secrets re-sealed under the active payload key');
    if (unopenable.length > 0) {
      reportUnopenable(
        new Error(`${unopenable.length} workspace secret(s) were sealed with a key PAYLOAD_ENCRYPTION_KEYS no longer holds: ${unopenable.slice(0, 20).join(', ')}`),
        'workspace secrets cannot be opened with PAYLOAD_ENCRYPTION_KEYS: tools that use them cannot authenticate until the key that sealed them is back in the ring (after the active one), or the secrets are set again',
      );
    }
  } catch (err) {
    logger.error({ err }, 'workspace secrets could not be re-sealed: the next worker start tries again');
  }
}

const SCHEDULE_TO_START_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60];

/** What a worker runs: the service's workflows and activities, or the bench's floor. */
export interface WorkerCode {
  workflowsPath: string;
  activities: object;
}

const SERVICE_CODE: WorkerCode = { workflowsPath: require.resolve('../workflows'), activities };

/**
 * Slots per queue (config().worker): a run's calls wait seconds on a provider, so agent-runs holds as
 * many in flight as memory allows, and keeps at least that many runs cached, since an evicted run
 * replays its whole history on its next task (the SDK would size the cache from the capped heap).
 * Background work parses documents (CPU and memory); deliveries wait at most 5 s each.
 *
 * Workflow task polls on agent-runs: half the task slots (the SDK's advice), half of them on the queue
 * every run's first task comes from. The SDK's default puts 2 of 10 there, sized for long workflows
 * whose tasks mostly come from the worker's own sticky queue; a run has two tasks, the first from the
 * shared queue. With 2, once the runs of a busy worker began to end, its first tasks piled up in
 * Temporal for tens of seconds while its task slots stood free (docs/performance.md). The other
 * queues keep the SDK's polls: nothing measured asks for more.
 */
function capacity(taskQueue: string): Pick<WorkerOptions, 'maxConcurrentActivityTaskExecutions' | 'maxConcurrentWorkflowTaskExecutions' | 'maxCachedWorkflows' | 'workflowTaskPollerBehavior' | 'nonStickyToStickyPollRatio'> {
  const w = config().worker;
  const activities: Record<string, number> = { [QUEUES.runs]: w.inflightRuns, [QUEUES.background]: w.backgroundActivities, [QUEUES.webhooks]: w.webhookActivities };
  // A queue of no service kind (a test's own run queue, the bench's floor) is sized as agent-runs.
  const runs = taskQueue === QUEUES.runs || !(taskQueue in activities);
  return {
    maxConcurrentActivityTaskExecutions: activities[taskQueue] ?? w.inflightRuns,
    maxConcurrentWorkflowTaskExecutions: w.workflowTasks,
    maxCachedWorkflows: runs ? w.cachedRuns : Math.max(100, activities[taskQueue]),
    ...(runs && { workflowTaskPollerBehavior: { type: 'simple-maximum', maximum: Math.max(2, Math.floor(w.workflowTasks / 2)) }, nonStickyToStickyPollRatio: 0.5 }),
  };
}

export function parseQueues(argv: string[]): TaskQueue[] {
  const at = argv.indexOf('--queues');
  if (at === -1) return [...TASK_QUEUES];
  const names = (argv[at + 1] ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = names.filter((n) => !(TASK_QUEUES as readonly string[]).includes(n));
  if (names.length === 0 || unknown.length) throw new Error(`--queues takes a comma-separated subset of ${TASK_QUEUES.join(',')}; got "${argv[at + 1] ?? ''}"`);
  return names as TaskQueue[];
}

/**
 * Starts one worker per task queue on one connection (its own, or `shared`, which the API's client
 * also uses with RUNS_IN_API); each polls its queue until shut down. The
 * bench's floor worker is started here too, so it has exactly the service worker's settings.
 * Traced (when spans are exported): the traced bundle, each activity a span continuing its workflow's
 * trace (its context in the activity's headers, put there by the bundle's workflow interceptors),
 * and the workflows' own spans reaching the process's span processor through the `exporter` sink.
 */
export async function startWorkers(queues: readonly string[], code: WorkerCode = SERVICE_CODE, shared?: NativeConnection): Promise<RunningWorkers> {
  installRuntime();
  const sinks = workflowSinks();
  const c = config();
  const connection = shared ?? (await NativeConnection.connect(c.temporal));
  const workflowBundleCode = await workflowBundle(code.workflowsPath);
  const workers = await Promise.all(
    queues.map((taskQueue) =>
      Worker.create({
        connection,
        namespace: c.temporalNamespace,
        taskQueue,
        workflowBundle: workflowBundleCode,
        activities: code.activities,
        dataConverter,
        // Traced, each activity is a span continuing its workflow's trace (from the activity's headers), in
        // which its run's content may be captured only as its header says (infra/genaiContent.ts).
        ...(sinks && { interceptors: { activity: [(ctx) => ({ inbound: new OpenTelemetryActivityInboundInterceptor(ctx) }), () => ({ inbound: new ContentHeaderInterceptor() })] }, sinks }),
        ...capacity(taskQueue),
        // A deploy's SIGTERM stops polling and lets in-flight activities (model calls) finish instead of cancelling them.
        shutdownGraceTime: c.workerShutdownGraceMs,
        // Heartbeats reach the server at most this often: an announced cancel's confirmation (domain/timings.ts says why).
        maxHeartbeatThrottleInterval: CANCEL_CONFIRM_FIRST_MS,
      }),
    ),
  );
  // The reconciler's Schedule comes with the service's background workers, so every deployment has it.
  if (code === SERVICE_CODE && queues.includes(QUEUES.background)) await ensureReconcileSchedule(await temporal());
  // Likewise the outbox dispatcher's Schedule, with the workers that deliver webhooks.
  const delivers = code === SERVICE_CODE && queues.includes(QUEUES.webhooks);
  if (delivers) {
    dispatching(true);
    await ensureOutboxDispatcher(await temporal());
    // Off the start's path: it reads every endpoint once.
    void resealAtRest();
    // The Temporal runtime shuts the workers down on these signals; the dispatcher's pass ends with them.
    for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => dispatching(false));
  }
  // A shared connection is its owner's to close (the API's client still uses it).
  const done = Promise.all(workers.map((w) => w.run())).then(async () => {
    // Its remote MCP servers are told the sessions end (a DELETE each), rather than left to expire.
    await closeMcpSessions();
    if (!shared) await connection.close();
  });
  return {
    workers,
    done,
    async shutdown() {
      if (delivers) dispatching(false);
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
      await done;
    },
  };
}
