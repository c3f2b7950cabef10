import { Liveness, Readiness } from '../../../domain/health';
import { json, operation, type Resource } from '../operation';

export const health: Resource = {
  paths: {
    '/healthz': {
      get: operation('get', {
        id: 'getHealth',
        summary: 'Liveness',
        description: 'The process is up.',
        tag: 'Operations',
        access: { credential: 'none' },
        responses: { '200': json('Up.', Liveness) },
      }),
    },
    '/readyz': {
      get: operation('get', {
        id: 'getReadiness',
        summary: 'Readiness',
        description:
          'Whether this instance can serve: PostgreSQL and Temporal are needed; without Redis it still serves reads (`degraded`). Shutting down, it is not ready at once. `checks.payloads` is `unopenable` (and the instance not ready) for 10 minutes after a process of this deployment met a Temporal payload sealed with a key PAYLOAD_ENCRYPTION_KEYS no longer holds.',
        tag: 'Operations',
        access: { credential: 'none' },
        responses: { '200': json('Ready (`ready` or `degraded`).', Readiness), '503': json('Not ready (`unavailable` or `shutting_down`).', Readiness) },
      }),
    },
  },
};
