import { DEFAULT_WEBHOOK_API_VERSION, type EventType } from '../domain/events';
import { mintId } from '../domain/ids';
import { statement, type Sql } from './sql';

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

const INSERT_EVENTS = statement(
  `INSERT INTO outbox_events (public_id, workspace_id, type, envelope)
   SELECT e.public_id, $1, e.type, e.envelope FROM jsonb_to_recordset($2::jsonb) AS e(public_id text, type text, envelope jsonb)`,
);

/**
 * The webhook-deliverable events one change causes. They are collected while the change is made and
 * written by write() inside the same transaction, so the events exist exactly when the change does.
 * The dispatcher delivers them later; nothing is lost in between.
 */
export class Outbox {
  private readonly events: { public_id: string; type: EventType; envelope: Record<string, unknown> }[] = [];

  constructor(
    private readonly tenant: Tenant,
    private readonly correlation: Correlation,
  ) {}

  add(type: EventType, object: Record<string, unknown>): void {
    const id = mintId('event');
    this.events.push({
      public_id: id,
      type,
      envelope: {
        id,
        type,
        api_version: DEFAULT_WEBHOOK_API_VERSION,
        created_at: new Date().toISOString(),
        tenant: this.tenant.publicId,
        tenant_ref: this.tenant.tenantRef ?? '',
        partner: this.tenant.partnerPublicId ?? '',
        data: { object },
        correlation: { request_id: this.correlation.requestId, trace_id: this.correlation.traceId, job_id: this.correlation.jobId ?? '' },
      },
    });
  }

  /** Inserts every collected event in one statement; call it inside the change's transaction. */
  async write(sql: Sql): Promise<void> {
    if (this.events.length === 0) return;
    await sql.rows(INSERT_EVENTS, [this.tenant.id, JSON.stringify(this.events)]);
    this.events.length = 0;
  }
}
