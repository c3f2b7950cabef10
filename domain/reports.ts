import { itemText, type RunOutcome } from './runs';
import { anyValue, closed, constant, failureRecord, freeObject, oneOfValues, orNull, publicId, text, timestamp, type Static } from './shape';

/** Reports: an agent asked to do a task, once, outside any conversation; the answer is the result. */

export const REPORT_FORMATS = ['json', 'text', 'markdown'] as const;
export type ReportFormat = (typeof REPORT_FORMATS)[number];
export const REPORT_STATUSES = ['queued', 'running', 'completed', 'failed'] as const;
export type ReportStatus = (typeof REPORT_STATUSES)[number];

export interface ReportFields {
  public_id: string;
  agent: string;
  run: string;
  name: string;
  format: ReportFormat;
  status: ReportStatus;
  result: unknown;
  error_code: string | null;
  error_message: string | null;
  metadata: Record<string, unknown>;
  created_at: Date;
  completed_at: Date | null;
}

/** The public report record: its shape, declared once for the view and the OpenAPI document. */
export const Report = closed({
  id: publicId('report'),
  object: constant('report'),
  name: text(),
  agent: text(),
  format: oneOfValues(REPORT_FORMATS),
  status: oneOfValues(REPORT_STATUSES),
  run: publicId('run', 'The run that makes it (readable with `reports:create`).'),
  result: anyValue('The JSON value (`json`) or the text (`text`, `markdown`); null until completed.'),
  error: failureRecord(),
  metadata: freeObject(),
  created_at: timestamp(),
  completed_at: orNull(timestamp()),
});

export function reportObject(row: ReportFields): Static<typeof Report> {
  return {
    id: row.public_id,
    object: 'report',
    name: row.name,
    agent: row.agent,
    format: row.format,
    status: row.status,
    run: row.run,
    result: row.result ?? null,
    error: row.error_code ? { code: row.error_code, message: row.error_message } : null,
    metadata: row.metadata,
    created_at: row.created_at.toISOString(),
    completed_at: row.completed_at?.toISOString() ?? null,
  };
}

/** What a report keeps of its run's outcome: the JSON value (json), or the text (text, markdown). */
export function reportSettlement(format: ReportFormat, outcome: RunOutcome | undefined) {
  if (!outcome || outcome.run.status !== 'completed') {
    return { status: 'failed' as const, result: undefined, error: outcome?.error ?? { code: 'internal_error', message: 'The report could not be made.' } };
  }
  const output = outcome.run.output;
  const result = format === 'json' ? output.find((item) => item.type === 'json')?.json : output.map((item) => (item.type === 'json' ? (item.text ?? '') : itemText(item))).join('\n');
  return { status: 'completed' as const, result, error: null };
}

/** The task as the agent receives it: a structured input, so the task and its inputs stay data. */
export function reportTask(task: string, inputs: Record<string, unknown> | undefined, format: ReportFormat): Record<string, unknown> {
  return { task, ...(inputs && { inputs }), ...(format === 'markdown' && { answer_format: 'Markdown' }) };
}
