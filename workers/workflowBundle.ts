import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger, type InjectedSinks, type WorkflowBundleOption } from '@temporalio/worker';
import { makeWorkflowExporter, type OpenTelemetryWorkflowExporter } from '@temporalio/interceptors-opentelemetry';
import { logger } from '../infra/logger';
import { exporting, startTracing } from '../infra/tracing';

/**
 * Bundled with the traced variant of the workflows (a prebuilt bundle cannot take them from
 * WorkerOptions): each workflow and its activities are spans of the trace that started them, and an
 * agent run the GenAI conventions' `invoke_agent` span above its activities' (after Temporal's, so
 * it is their child). They cost a worker about 8 ms of CPU per run and 50 MB (measured with `npm run
 * bench -- --quick`), so they run only where spans are exported; elsewhere the provider request
 * carries the run's trace id.
 */
const workflowInterceptorModules = [require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'), require.resolve('../workflows/genaiInterceptors')];

/** Whether this process's workers run the traced workflow bundle: only when spans leave the process. */
export function tracedWorkflows(): boolean {
  return exporting();
}

/**
 * The sinks a worker of the traced bundle registers: the interceptors' workflow spans, made in the
 * sandbox, reach the process's span processor through `exporter`. The untraced bundle needs none.
 */
export function workflowSinks(traced = tracedWorkflows()): InjectedSinks<{ exporter: OpenTelemetryWorkflowExporter }> | undefined {
  if (!traced) return undefined;
  const tracing = startTracing('agent-execution-worker');
  return { exporter: makeWorkflowExporter(tracing.processor, tracing.resource) };
}

const quiet = new DefaultLogger('WARN', (entry) => logger.warn({ sdk: 'temporal-bundler' }, entry.message));

/** Where `npm run build` writes the bundles of a compiled workflows module, beside it (source map inline). */
function prebuilt(workflowsPath: string, traced: boolean): { codePath: string } {
  return { codePath: workflowsPath.replace(/\.js$/, traced ? '.traced.bundle.js' : '.bundle.js') };
}

const bundled = (workflowsPath: string, traced: boolean) => bundleWorkflowCode({ workflowsPath, ...(traced && { workflowInterceptorModules }), logger: quiet });

const made = new Map<string, Promise<WorkflowBundleOption>>();

/**
 * The workflow code a worker runs: the bundle `npm run build` wrote beside the compiled workflows,
 * or, running from source (the test suite), one bundled now and shared by the process's workers.
 * Prebuilt, a worker never loads webpack: it starts faster and stays about 60 MB smaller.
 */
export function workflowBundle(workflowsPath: string, traced = tracedWorkflows()): Promise<WorkflowBundleOption> {
  const built = prebuilt(workflowsPath, traced);
  if (workflowsPath.endsWith('.js') && existsSync(built.codePath)) return Promise.resolve(built);
  const key = `${workflowsPath}${traced ? ' (traced)' : ''}`;
  let bundle = made.get(key);
  if (!bundle) made.set(key, (bundle = bundled(workflowsPath, traced)));
  return bundle;
}

/** `node dist/workers/workflowBundle.js <compiled workflows module>…` (part of npm run build): writes their bundles. */
async function main(): Promise<void> {
  for (const entry of process.argv.slice(2)) {
    const workflowsPath = path.resolve(entry);
    for (const traced of [false, true]) writeFileSync(prebuilt(workflowsPath, traced).codePath, (await bundled(workflowsPath, traced)).code);
  }
}

if (require.main === module) {
  main().catch((err) => {
    logger.fatal({ err }, 'bundling the workflow code failed');
    process.exit(1);
  });
}
