import type { Scope } from './scopes';

/** The partner webhook envelope (spec: "Webhook event envelope"), written to the outbox. */
export interface EventEnvelope {
  id: string;
  type: EventType;
  api_version: string;
  created_at: string;
  tenant: string;
  tenant_ref: string;
  partner: string;
  data: { object: Record<string, unknown> };
  correlation: { request_id: string; trace_id: string; job_id: string; schedule_id?: string };
}

export interface EventKind {
  /** What `data.object` is. */
  resource: string;
  /** The scope the endpoint's creating key must hold for the event to be delivered. */
  scope: Scope;
  /** Preview events are listed with what would trigger them, but nothing emits them yet. */
  preview: boolean;
  fires_when: string;
}

/** The webhook catalogue (GET /api/v2/webhooks/catalogue/): every event type, what it carries, what it needs. */
export const EVENT_CATALOGUE = {
  'message.received': { resource: 'message', scope: 'messages:read', preview: false, fires_when: 'A customer message is accepted into a conversation (a run on it begins).' },
  'message.sent': { resource: 'message', scope: 'messages:read', preview: false, fires_when: "The assistant's reply is recorded in the conversation (the run settles)." },
  'conversation.created': { resource: 'conversation', scope: 'conversations:read', preview: false, fires_when: 'A conversation opens (created, or first resolved by its external_ref).' },
  'conversation.completed': {
    resource: 'conversation',
    scope: 'conversations:read',
    preview: true,
    fires_when: 'A conversation reaches a terminal state. Conversations have no terminal state in this version (none is closed), so nothing emits it yet.',
  },
  'handoff.requested': { resource: 'handoff', scope: 'conversations:read', preview: false, fires_when: 'A run stopped at a handoff tool: a person is needed. Time-sensitive.' },
  'lead.hot': { resource: 'lead', scope: 'messages:read', preview: true, fires_when: 'A message showed buying intent (would be emitted by a lead-scoring step after a message is received).' },
  'lead.verification_requested': { resource: 'lead', scope: 'messages:read', preview: true, fires_when: 'A lead asked to be verified (would be emitted by a verification tool call).' },
  'agent.run.started': { resource: 'run', scope: 'agents:read', preview: false, fires_when: 'A run begins (any kind: response, agent run, message, report, extraction).' },
  'agent.run.completed': { resource: 'run', scope: 'agents:read', preview: false, fires_when: 'A run settles as completed.' },
  'agent.run.failed': { resource: 'run', scope: 'agents:read', preview: false, fires_when: 'A run settles as failed, cancelled or blocked.' },
  'agent.run.action_required': {
    resource: 'run',
    scope: 'agents:read',
    preview: false,
    fires_when: 'A run waits for people: a tool call needs an approval, or a client tool its output (`required_action`, without the arguments: read them from the run). Answer with POST /api/v2/runs/{run_id}/actions. Time-sensitive.',
  },
  'schedule.run_blocked': {
    resource: 'schedule_firing',
    scope: 'schedules:read',
    preview: false,
    fires_when: "A schedule fired and its workspace's balance did not cover the run: no run started, and the schedule goes on.",
  },
  'schedule.paused': {
    resource: 'schedule',
    scope: 'schedules:read',
    preview: false,
    fires_when: 'A schedule paused itself: its creator can no longer run agents, or too many firings in a row could not run. Once per pause; `paused_reason` says why. Resume it with PATCH.',
  },
  'usage.threshold_reached': { resource: 'usage', scope: 'usage:read', preview: false, fires_when: "A run's settlement takes the workspace's credit balance below its usage threshold." },
} as const satisfies Record<string, EventKind>;

export type EventType = keyof typeof EVENT_CATALOGUE;

export const EVENT_TYPES = Object.keys(EVENT_CATALOGUE) as EventType[];

export function isEventType(value: string): value is EventType {
  return Object.hasOwn(EVENT_CATALOGUE, value);
}

/** The event types a key with these scopes may receive. */
export function permittedEvents(scopes: ReadonlySet<string>): EventType[] {
  return EVENT_TYPES.filter((t) => scopes.has(EVENT_CATALOGUE[t].scope));
}

/** Partner endpoints default to this envelope version; it is fixed per endpoint at delivery. */
export const DEFAULT_WEBHOOK_API_VERSION = '2026-06-01';
export const WEBHOOK_API_VERSIONS = [DEFAULT_WEBHOOK_API_VERSION] as const;
