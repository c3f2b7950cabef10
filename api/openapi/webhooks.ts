import { DEFAULT_WEBHOOK_API_VERSION, EVENT_CATALOGUE, EVENT_TYPES, type EventType } from '../../domain/events';
import { anyObject, closed, constant, integer, orNull, publicId, ref, string, timestamp, type JsonSchema } from './jsonSchema';

/** What `data.object` is, per resource (activities/runs.ts and db/conversations.ts write them to the outbox). */
const OBJECTS: Record<(typeof EVENT_CATALOGUE)[EventType]['resource'], JsonSchema> = {
  message: closed({ id: publicId('message'), conversation: publicId('conversation'), role: { type: 'string', enum: ['user', 'assistant'] } }, { required: ['id', 'role'] }),
  conversation: ref('Conversation'),
  handoff: closed(
    { run: publicId('run'), conversation: orNull(publicId('conversation')), agent: string(), reason: string({ description: 'The model\'s words; absent for stateless runs, which keep no copy of their exchange.' }) },
    { optional: ['reason'] },
  ),
  run: closed(
    {
      id: publicId('run'),
      agent: string(),
      agent_version: integer(),
      status: ref('RunStatus'),
      usage: { ...ref('Usage'), description: 'On agent.run.completed and agent.run.failed.' },
      error_code: { ...ref('ErrorCode'), description: 'On agent.run.failed.' },
      refused: { type: 'boolean', const: true, description: 'On agent.run.completed when the model refused (the run\'s output is a refusal item).' },
      refusal: string({ description: "The model's explanation of its refusal; absent for stateless runs, which keep no copy of their exchange." }),
      required_action: { ...ref('RequiredAction'), description: 'On agent.run.action_required: the calls the run waits on, without arguments (read them from the run), with their arguments_sha256.' },
    },
    { required: ['id', 'agent', 'agent_version', 'status'] },
  ),
  usage: closed({ workspace: publicId('workspace'), balance: integer({ description: 'Credits left.' }), threshold: integer() }),
  lead: anyObject('Preview: the field layout is not fixed yet.'),
  schedule: ref('Schedule'),
  schedule_firing: closed({
    object: constant('schedule_firing'),
    schedule: publicId('schedule'),
    agent: string(),
    fired_at: timestamp('When the schedule fired.'),
    error: closed({ code: ref('ErrorCode'), message: string() }),
  }),
};

const envelope = (type: EventType): JsonSchema =>
  closed(
    {
      id: publicId('event', 'Stable across retries and resends: dedupe on it.'),
      type: constant(type),
      api_version: string({ description: `Fixed per endpoint; default \`${DEFAULT_WEBHOOK_API_VERSION}\`.` }),
      created_at: timestamp('ISO 8601 UTC.'),
      tenant: publicId('workspace', 'Internal workspace id.'),
      tenant_ref: string({ description: 'The partner\'s own identifier for the merchant.' }),
      partner: string({ description: 'Partner identifier.' }),
      data: closed({ object: OBJECTS[EVENT_CATALOGUE[type].resource] }),
      correlation: closed(
        { request_id: string(), trace_id: string(), job_id: string({ description: 'May be empty.' }), schedule_id: publicId('schedule', 'Only on the events of a schedule\'s firing (its run\'s, and schedule.run_blocked).') },
        { optional: ['schedule_id'] },
      ),
    },
    { description: 'The webhook event envelope.' },
  );

const header = (name: string, description: string) => ({ name, in: 'header', required: true, schema: { type: 'string' }, description });

const HEADERS = [
  header('X-Service-Signature', '`t=<unix_seconds>,v1=<hex_hmac>`: HMAC-SHA256 keyed with the endpoint secret over `<t>.` and the exact raw body; several `v1=` values during a rotation. Reject a timestamp more than 300 s from your clock.'),
  header('X-Service-Event', 'The event type.'),
  header('X-Service-Event-Id', 'The `evt_` id.'),
  header('X-Service-Delivery-Id', 'The delivery id.'),
  header('X-Service-Attempt', 'The attempt number, from 1.'),
  header('X-Service-Api-Version', 'The envelope version.'),
  header('webhook-id', 'Standard Webhooks: the delivery id.'),
  header('webhook-timestamp', 'Standard Webhooks: the same `t`.'),
  header('webhook-signature', 'Standard Webhooks: `v1,<base64>` over `<id>.<t>.<body>`; space-separated values during a rotation.'),
];

/** The partner webhook events, one entry per type of domain/events.ts, each a POST the service makes to the partner's endpoint. */
export const webhooks: Record<string, JsonSchema> = Object.fromEntries(
  EVENT_TYPES.map((type) => {
    const kind = EVENT_CATALOGUE[type];
    return [
      type,
      {
        post: {
          operationId: `webhook_${type.replaceAll('.', '_')}`,
          summary: `${type}${kind.preview ? ' (preview)' : ''}`,
          description: `${kind.fires_when}\n\nCarries a \`${kind.resource}\`. Delivered only to endpoints whose creating key holds \`${kind.scope}\`.${kind.preview ? ' Preview: nothing emits it yet.' : ''} Attempts: at once, then after 60 s, 5 min and 30 min; 5 s each; a 2xx acknowledges, 5xx, 429 and timeouts are retried, other 4xx are not.`,
          tags: ['Webhook events'],
          security: [],
          'x-required-scopes': [kind.scope],
          parameters: HEADERS,
          requestBody: { required: true, content: { 'application/json': { schema: envelope(type) } } },
          responses: { '2XX': { description: 'Acknowledged: answer at once, then handle the event (once per `id`).' } },
        },
      },
    ];
  }),
);
