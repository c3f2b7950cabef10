import { Report } from '../../../domain/reports';
import { CreateReport, ListReports, ReadReport } from '../../routes/reports/schema';
import { cursorList } from '../components';
import { replayMarker } from '../execution';
import { ref } from '../jsonSchema';
import { json, LOCATION, operation, type Resource } from '../operation';

export const reports: Resource = {
  schemas: { Report },
  paths: {
    '/api/v2/reports': {
      post: operation('post', {
        id: 'createReport',
        summary: 'Create a report',
        description: 'An agent does a task once, outside any conversation; the answer is kept as `result`. `format` `json` needs a `schema` (checked like a run\'s `response_format`, before authorization); other formats take none.',
        tag: 'Reports',
        access: { credential: 'workspace', scopes: ['reports:create'] },
        request: CreateReport,
        responses: { '202': json('Accepted: the report as it stands; poll `Location`.', ref('Report'), { ...LOCATION, ...replayMarker('Idempotent-Replay') }) },
        errors: ['agent_not_found', 'agent_not_available', 'usage_blocked', 'idempotency_conflict'],
      }),
      get: operation('get', {
        id: 'listReports',
        summary: 'List reports',
        description: 'Newest first; `cursor` in, `next_cursor` out.',
        tag: 'Reports',
        access: { credential: 'workspace', scopes: ['reports:read'] },
        request: ListReports,
        responses: { '200': json('A page of reports.', cursorList(ref('Report'))) },
      }),
    },
    '/api/v2/reports/{id}': {
      get: operation('get', {
        id: 'getReport',
        summary: 'Read a report',
        tag: 'Reports',
        access: { credential: 'workspace', scopes: ['reports:read'] },
        request: ReadReport,
        responses: { '200': json('The report.', ref('Report')) },
        errors: ['report_not_found'],
      }),
    },
  },
};
