import { closed, constant, oneOfValues } from '../jsonSchema';
import { json, operation, type Resource } from '../operation';

const check = oneOfValues(['ok', 'unavailable']);
const readiness = {
  oneOf: [
    closed({ status: oneOfValues(['ready', 'degraded', 'unavailable']), checks: closed({ postgres: check, redis: check, temporal: check, payloads: constant('unopenable') }, { optional: ['payloads'] }) }),
    closed({ status: constant('shutting_down') }),
  ],
};

export const health: Resource = {
  paths: {
    '/healthz': {
      get: operation('get', {
        id: 'getHealth',
        summary: 'Liveness',
        description: 'The process is up.',
        tag: 'Operations',
        access: { credential: 'none' },
        responses: { '200': json('Up.', closed({ status: constant('ok') })) },
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
        responses: { '200': json('Ready (`ready` or `degraded`).', readiness), '503': json('Not ready (`unavailable` or `shutting_down`).', readiness) },
      }),
    },
  },
};
