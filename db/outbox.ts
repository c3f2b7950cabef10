import type { Transaction } from 'sequelize';
import { DEFAULT_WEBHOOK_API_VERSION, type EventType } from '../domain/events';
import { mintId } from '../domain/ids';
import { OutboxEvent } from './models';

export interface Tenant {
  id: number;
  publicId: string;
  tenantRef: string | null;
  partnerPublicId: string | null;
}

export interface Correlation {
  requestId: string;
  traceId: string;
  jobId?: string;
}

/**
 * Writes a webhook-deliverable event inside the caller's transaction, so the event exists exactly
 * when the change it describes does. The dispatcher delivers it later; nothing is lost in between.
 */
export async function recordEvent(
  transaction: Transaction,
  tenant: Tenant,
  type: EventType,
  object: Record<string, unknown>,
  correlation: Correlation,
): Promise<void> {
  const id = mintId('event');
  await OutboxEvent.create(
    {
      publicId: id,
      workspaceId: tenant.id,
      type,
      envelope: {
        id,
        type,
        api_version: DEFAULT_WEBHOOK_API_VERSION,
        created_at: new Date().toISOString(),
        tenant: tenant.publicId,
        tenant_ref: tenant.tenantRef ?? '',
        partner: tenant.partnerPublicId ?? '',
        data: { object },
        correlation: { request_id: correlation.requestId, trace_id: correlation.traceId, job_id: correlation.jobId ?? '' },
      },
    },
    { transaction },
  );
}
