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
  correlation: { request_id: string; trace_id: string; job_id: string };
}

export const EVENT_TYPES = [
  'message.received',
  'message.sent',
  'conversation.created',
  'conversation.completed',
  'handoff.requested',
  'lead.hot',
  'lead.verification_requested',
  'agent.run.started',
  'agent.run.completed',
  'agent.run.failed',
  'usage.threshold_reached',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** Partner endpoints default to this envelope version; it is fixed per endpoint at delivery. */
export const DEFAULT_WEBHOOK_API_VERSION = '2026-06-01';
