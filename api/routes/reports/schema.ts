import * as yup from 'yup';
import { invalidRequest } from '../../../domain/errors';
import { schemaProblem } from '../../../domain/structuredOutput';
import type { ReportFormat } from '../../../domain/reports';
import { IDEMPOTENCY_HEADERS } from '../../middleware/idempotent';
import { refined } from '../../../contract/parse';
import { idParam, listQuery } from '../../../contract/listQuery';
import { plainObject, runtimeInputSchema } from '../../../contract/runtimeInput';
import { structuredSchema } from '../../../contract/structuredSchema';

/** Larger list requests are clamped to this. */
export const MAX_REPORT_LIMIT = 100;

const createReport = yup
  .object({
    agent: yup.string().required('agent is required').max(200),
    name: yup.string().required('name is required').min(1).max(200, 'name must be at most 200 characters'),
    task: yup.string().required('task is required').min(1).max(20_000, 'task must be at most 20000 characters'),
    inputs: plainObject({ description: 'Data for the task.' }),
    format: yup.string().oneOf(['json', 'text', 'markdown'], 'format must be one of json, text, markdown').meta({ jsonSchema: { default: 'text' } }),
    schema: structuredSchema(),
    metadata: runtimeInputSchema.fields.metadata,
  })
  .noUnknown(true, 'unknown key: ${unknown}')
  .strict()
  // CreateReport.body's rule: `format` json needs a `schema`, other formats take none.
  .meta({ jsonSchema: { if: { properties: { format: { const: 'json' } }, required: ['format'] }, then: { required: ['schema'] }, else: { not: { required: ['schema'] } } } });

export interface ReportRequest {
  agent: string;
  name: string;
  task: string;
  inputs?: Record<string, unknown>;
  format: ReportFormat;
  schema?: Record<string, unknown>;
  metadata: Record<string, unknown>;
}

/** POST /api/v2/reports: `format` json needs a `schema` (checked like a run's response_format), other formats take none. */
export const CreateReport = {
  body: refined(createReport, (body): ReportRequest => {
    const format = (body.format ?? 'text') as ReportFormat;
    if (format === 'json' && !body.schema) throw invalidRequest('schema is required when format is json.');
    if (format !== 'json' && body.schema) throw invalidRequest('schema is only read when format is json.');
    const problem = body.schema && schemaProblem(body.schema);
    if (problem) throw invalidRequest(problem);
    return { agent: body.agent, name: body.name, task: body.task, inputs: body.inputs, format, schema: body.schema, metadata: (body.metadata ?? {}) as Record<string, unknown> };
  }),
  headers: IDEMPOTENCY_HEADERS,
};

export const ReadReport = { params: idParam('report', 'a report id (rpt_…)') };

export const ListReports = { query: listQuery('report', MAX_REPORT_LIMIT) };
