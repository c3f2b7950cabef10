/**
 * What a webhookDelivery workflow takes and returns, apart from the workflow: its starter
 * (webhookDelivery.client.ts, which the outbox activity calls) types its starts with it, so no
 * activity imports the workflow, and the workflow bundle never reaches activity code.
 */
export interface WebhookDeliveryInput {
  deliveryId: string;
  /** The delivery's generation this run sends (raised by each resend): a run of an older one stops. */
  generation: number;
  /** The attempt number of this run's first attempt: 1, or on from the attempts a resend follows. */
  firstAttempt: number;
  /** When attempts after the first come, in ms after the first (configuration: the spec's 60 s, 5 min, 30 min). */
  retryDelaysMs: number[];
  /** Where a run that continued as new was. */
  resume?: { index: number; made: number; firstAttemptAt?: number; notBefore: number };
}

/** How a run ended: the delivery's status, or `superseded` when a resend took the delivery over. */
export type DeliveryOutcome = 'succeeded' | 'failed' | 'skipped' | 'superseded';

export type WebhookDeliveryWorkflow = (input: WebhookDeliveryInput) => Promise<DeliveryOutcome>;
