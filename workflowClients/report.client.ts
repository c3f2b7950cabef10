import type { Client } from '@temporalio/client';
import type { ReportFormat } from '../domain/reports';
import type { RunInput } from '../domain/runs';
import { QUEUES, SEARCH_ATTRIBUTES, type TaskQueue } from './registry';
import { startOnce } from './startOnce';
import { workDescribed } from './summaries';

export interface ReportInput {
  reportId: string;
  format: ReportFormat;
  /** The report's run: an ordinary agentRun of kind `report` (billed, logged, repaired like any). */
  run: RunInput;
}

/** The workflow as its starters know it: by signature (workflows/report.ts), so no workflow code is reached from here. */
type ReportWorkflow = (input: ReportInput) => Promise<void>;

/** Everything the API does with report workflows: id (the report id), queue, search attributes and memo. */
export const REPORT_QUEUE: TaskQueue = QUEUES.background;

/** Starts the report's workflow, or leaves the one already started alone (a retried request). */
export async function startReportWorkflow(client: Client, input: ReportInput): Promise<void> {
  await startOnce<ReportWorkflow>(client, 'report', {
    taskQueue: REPORT_QUEUE,
    workflowId: input.reportId,
    args: [input],
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.workspaceId, value: input.run.workspace.publicId },
      { key: SEARCH_ATTRIBUTES.agentId, value: input.run.agent.publicId },
      { key: SEARCH_ATTRIBUTES.kind, value: 'report' },
    ],
    memo: { request_id: input.run.requestId, trace_id: input.run.traceId },
    ...workDescribed(`report (${input.format})`, input.run.workspace.publicId, { report: input.reportId, agent: input.run.agent.publicId, run: input.run.runId, requestId: input.run.requestId, traceId: input.run.traceId }),
  });
}
