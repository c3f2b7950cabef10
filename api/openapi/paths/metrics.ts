import { operation, type Resource } from '../operation';

export const metrics: Resource = {
  paths: {
    '/metrics': {
      get: operation('get', {
        id: 'getMetrics',
        summary: 'Prometheus metrics',
        description: 'This instance\'s metrics in the Prometheus text exposition format, for the operator\'s scraper; keep the path off the public listener when no `METRICS_TOKEN` is set.',
        tag: 'Operations',
        access: { credential: 'metrics' },
        responses: { '200': { description: 'The metrics.', content: { 'text/plain': { schema: { type: 'string' } } } } },
        errors: ['authentication_error'],
      }),
    },
  },
};
