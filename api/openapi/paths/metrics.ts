import { operation, type Resource } from '../operation';

export const metrics: Resource = {
  paths: {
    '/metrics': {
      get: operation('get', {
        id: 'getMetrics',
        summary: 'Prometheus metrics',
        description: 'This instance\'s metrics in the Prometheus text exposition format, for the operator\'s scraper; off (501) without `METRICS_TOKEN`, except in development mode (`DEVELOPMENT_MODE`), where it is open.',
        tag: 'Operations',
        access: { credential: 'metrics' },
        responses: { '200': { description: 'The metrics.', content: { 'text/plain': { schema: { type: 'string' } } } } },
        errors: ['authentication_error', 'not_implemented'],
      }),
    },
  },
};
