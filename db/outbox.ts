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
  scheduleId?: string;
}

/**
 * Only for a workspace whose partner has an endpoint (of any status: a disabled one's deliveries are
 * kept as `skipped` for `recover`). No one else could receive them, and a partner's endpoint sees no
 * events from before it existed anyway (docs/webhooks.md); most runs of a direct customer write none.
 */
const INSERT_EVENTS = statement(
  `INSERT INTO outbox_events (public_id, workspace_id, type, envelope)
   SELECT e.public_id, $1, e.type, e.envelope FROM jsonb_to_recordset($2::jsonb) AS e(public_id text, type text, envelope jsonb)
    WHERE EXISTS (SELECT 1 FROM workspaces w JOIN webhook_endpoints p ON p.partner_id = w.partner_id AND p.deleted_at IS NULL WHERE w.id = $1)`,
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
        correlation: {
          request_id: this.correlation.requestId,
          trace_id: this.correlation.traceId,
          job_id: this.correlation.jobId ?? '',
          // Only on a scheduled run's events: nothing changes for anyone else's.
          ...(this.correlation.scheduleId && { schedule_id: this.correlation.scheduleId }),
        },
      },
    });
  }

  /** Inserts every collected event in one statement (where anyone can receive them); call it inside the change's transaction. */
  async write(sql: Sql): Promise<void> {
    // A workspace without a partner has no endpoint to receive them: no statement at all.
    if (this.events.length > 0 && this.tenant.partnerPublicId !== null) await sql.rows(INSERT_EVENTS, [this.tenant.id, JSON.stringify(this.events)]);
    this.events.length = 0;
  }
}
