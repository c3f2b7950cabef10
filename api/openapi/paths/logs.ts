import { LogEntry } from '../../../domain/logEntry';
import { ListLogs } from '../../routes/logs/schema';
import { cursorList } from '../components';
import { ref } from '../jsonSchema';
import { json, operation, type Resource } from '../operation';

export const logs: Resource = {
  schemas: { LogEntry },
  paths: {
    '/api/v2/logs': {
      get: operation('get', {
        id: 'listLogs',
        summary: 'List execution logs',
        description: 'Newest first. Pages with `cursor` in and `next` out.',
        tag: 'Logs',
        access: { credential: 'workspace', scopes: ['logs:read'] },
        request: ListLogs,
        responses: { '200': json('A page of log entries.', cursorList(ref('LogEntry'), 'next')) },
      }),
    },
  },
};
