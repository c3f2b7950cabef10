import { ReadUsage } from '../../routes/usage/schema';
import { UsageReport } from '../../../domain/usageReport';
import { json, operation, type Resource } from '../operation';

export const usage: Resource = {
  paths: {
    '/api/v2/usage': {
      get: operation('get', {
        id: 'getUsage',
        summary: 'Read usage',
        description: 'The credit balance, and the credits billed per UTC day and channel (ledger line) over the last `days` days.',
        tag: 'Usage',
        access: { credential: 'workspace', scopes: ['usage:read'] },
        request: ReadUsage,
        responses: { '200': json('Usage.', UsageReport) },
      }),
    },
  },
};
