import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger, type InjectedSinks, type WorkflowBundleOption } from '@temporalio/worker';
import { makeWorkflowExporter, type OpenTelemetryWorkflowExporter } from '@temporalio/interceptors-opentelemetry';
import { logger } from '../infra/logger';
import { startTracing } from '../infra/tracing';

/** Bundled with the workflows (a prebuilt bundle cannot take them from WorkerOptions): each workflow and its activities continue the trace that started it. */
const workflowInterceptorModules = [require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors')];

/**
 * The sinks every worker of these bundles registers: the interceptors' workflow spans, made in the
 * sandbox, reach the process's span processor through `exporter` (a worker without it logs an error per span).
 */
export function workflowSinks(): InjectedSinks<{ exporter: OpenTelemetryWorkflowExporter }> {
  const tracing = startTracing('agent-execution-worker');
  return { exporter: makeWorkflowExporter(tracing.processor, tracing.resource) };
}

const quiet = new DefaultLogger('WARN', (entry) => logger.warn({ sdk: 'temporal-bundler' }, entry.message));

/** Where `npm run build` writes the bundle of a compiled workflows module, beside it (source map inline). */
function prebuilt(workflowsPath: string): { codePath: string } {
  return { codePath: workflowsPath.replace(/\.js$/, '.bundle.js') };
}

const made = new Map<string, Promise<WorkflowBundleOption>>();

/**
 * The workflow code a worker runs: the bundle `npm run build` wrote beside the compiled workflows,
 * or, running from source (the test suite), one bundled now and shared by the process's workers.
 * Prebuilt, a worker never loads webpack: it starts faster and stays about 60 MB smaller.
 */
export function workflowBundle(workflowsPath: string): Promise<WorkflowBundleOption> {
  const built = prebuilt(workflowsPath);
  if (workflowsPath.endsWith('.js') && existsSync(built.codePath)) return Promise.resolve(built);
  let bundle = made.get(workflowsPath);
  if (!bundle) made.set(workflowsPath, (bundle = bundleWorkflowCode({ workflowsPath, workflowInterceptorModules, logger: quiet })));
  return bundle;
}

/** `node dist/workers/workflowBundle.js <compiled workflows module>…` (part of npm run build): writes their bundles. */
async function main(): Promise<void> {
  for (const entry of process.argv.slice(2)) {
    const workflowsPath = path.resolve(entry);
    const { code } = await bundleWorkflowCode({ workflowsPath, workflowInterceptorModules, logger: quiet });
    writeFileSync(prebuilt(workflowsPath).codePath, code);
  }
}

if (require.main === module) {
  main().catch((err) => {
    logger.fatal({ err }, 'bundling the workflow code failed');
    process.exit(1);
  });
}
