import { mintId } from '../domain/ids';
import type { DeliveryStatus, DeliveryView } from '../domain/webhooks';
import { pageStart } from './paging';
import type { SealedSecrets } from './webhookEndpoints';
import { sql, statement, transaction, type Sql } from './sql';

/**
 * Deliveries: one per (outbox event, matching endpoint), created by the dispatcher in the transaction
 * that marks the event dispatched, so an event is fanned out exactly once and nothing between the
 * outbox and the deliveries is lost. Each attempt is a row of its own.
 */

const CLAIM_EVENTS = statement(
  `SELECT o.id AS "eventId", o.workspace_id AS "workspaceId", o.type, w.partner_id AS "partnerId"
     FROM outbox_events o JOIN workspaces w ON w.id = o.workspace_id
    WHERE o.dispatched_at IS NULL
    ORDER BY o.id LIMIT $1 FOR UPDATE OF o SKIP LOCKED`,
);
const TARGETS = statement(
  `SELECT id, partner_id AS "partnerId", status, enabled_events AS "enabled", permitted_events AS "permitted"
     FROM webhook_endpoints WHERE partner_id = ANY($1::bigint[]) AND deleted_at IS NULL`,
);
const INSERT_DELIVERIES = statement(
  `INSERT INTO webhook_deliveries (public_id, event_id, endpoint_id, partner_id, workspace_id, event_type, status, started, completed_at)
   SELECT d.public_id, d.event_id, d.endpoint_id, d.partner_id, d.workspace_id, d.event_type, d.status, d.status = 'skipped',
          CASE WHEN d.status = 'skipped' THEN now() END
     FROM jsonb_to_recordset($1::jsonb) AS d(public_id text, event_id bigint, endpoint_id bigint, partner_id bigint, workspace_id bigint, event_type text, status text)
   ON CONFLICT (event_id, endpoint_id) DO NOTHING`,
);
const MARK_DISPATCHED = statement('UPDATE outbox_events SET dispatched_at = now() WHERE id = ANY($1::bigint[])');

interface ClaimedEvent {
  eventId: number;
  workspaceId: number;
  type: string;
  partnerId: number | null;
}

interface Target {
  id: number;
  partnerId: number;
  status: string;
  enabled: string[];
  permitted: string[];
}

/**
 * Turns up to `limit` undispatched outbox events into deliveries, one per endpoint of the workspace's
 * partner that both enabled the event type (or `*`) and may receive it (the creating key's scopes).
 * A disabled endpoint's deliveries are recorded as `skipped`, so `recover` can send them later.
 * Returns how many events it dispatched.
 */
export async function fanOutEvents(limit: number): Promise<number> {
  return transaction(async (tx) => {
    const events = await tx.rows<ClaimedEvent>(CLAIM_EVENTS, [limit]);
    if (events.length === 0) return 0;
    const partners = [...new Set(events.map((e) => e.partnerId).filter((p): p is number => p !== null))];
    const targets = partners.length ? await tx.rows<Target>(TARGETS, [partners]) : [];
    const deliveries = events.flatMap((e) =>
      targets
        .filter((t) => t.partnerId === e.partnerId && t.permitted.includes(e.type) && (t.enabled.includes('*') || t.enabled.includes(e.type)))
        .map((t) => ({
          public_id: mintId('delivery'),
          event_id: e.eventId,
          endpoint_id: t.id,
          partner_id: t.partnerId,
          workspace_id: e.workspaceId,
          event_type: e.type,
          status: t.status === 'active' ? 'pending' : 'skipped',
        })),
    );
    if (deliveries.length) await tx.rowCount(INSERT_DELIVERIES, [JSON.stringify(deliveries)]);
    await tx.rowCount(MARK_DISPATCHED, [events.map((e) => e.eventId)]);
    return events.length;
  });
}

// Merchants take turns: each one's oldest unstarted delivery, then each one's second, and so on. The
// merchants with unstarted deliveries are found by skipping through the index (one probe each), not
// by reading every unstarted row; each contributes a few per pass, so a backlog cannot crowd out the rest.
const UNSTARTED = statement(
  `WITH RECURSIVE merchants AS (
     (SELECT workspace_id FROM webhook_deliveries WHERE NOT started AND status = 'pending' ORDER BY workspace_id LIMIT 1)
     UNION ALL
     SELECT (SELECT u.workspace_id FROM webhook_deliveries u WHERE NOT u.started AND u.status = 'pending' AND u.workspace_id > m.workspace_id ORDER BY u.workspace_id LIMIT 1)
       FROM merchants m WHERE m.workspace_id IS NOT NULL
   )
   SELECT d.public_id AS "publicId", w.public_id AS "workspacePublicId", d.attempts, d.generation
     FROM merchants m
     CROSS JOIN LATERAL (
       SELECT u.*, row_number() OVER (ORDER BY u.id) AS turn FROM (
         SELECT * FROM webhook_deliveries x WHERE x.workspace_id = m.workspace_id AND NOT x.started AND x.status = 'pending' ORDER BY x.id LIMIT $2
       ) u
     ) d
     JOIN workspaces w ON w.id = d.workspace_id
    WHERE m.workspace_id IS NOT NULL
    ORDER BY d.turn, d.id LIMIT $1`,
);
// A claim is one conditional update: a delivery not yet started, or one this namespace claimed itself
// (its start is idempotent there), so two namespaces' dispatchers never both start a generation.
const CLAIM = statement(
  `UPDATE webhook_deliveries SET started = true, claimed_by = $3, claimed_at = now()
    WHERE public_id = $1 AND generation = $2 AND status = 'pending' AND (NOT started OR claimed_by = $3)`,
);
// Claimed here but never attempted, a while ago: a crash (or a failed start) between claim and start.
const STALE_CLAIMS = statement(
  `SELECT d.public_id AS "publicId", w.public_id AS "workspacePublicId", d.attempts, d.generation
     FROM webhook_deliveries d JOIN workspaces w ON w.id = d.workspace_id
    WHERE d.started AND d.status = 'pending' AND d.claimed_by = $1 AND d.claimed_at < now() - make_interval(secs => $2) AND d.attempts = 0
    ORDER BY d.claimed_at LIMIT $3`,
);

/** A delivery as its workflow is started: id, the merchant's workspace (a search attribute), the attempts it has had, its generation. */
export interface DeliveryToStart {
  publicId: string;
  workspacePublicId: string;
  attempts: number;
  generation: number;
}

/** Per merchant per pass: what one merchant's backlog may take of a pass before the others have had a turn. */
const PER_MERCHANT = 100;

/** Deliveries whose workflow has not been started yet, merchants taking turns. */
export function unstartedDeliveries(limit: number, on: Sql = sql): Promise<DeliveryToStart[]> {
  return on.rows<DeliveryToStart>(UNSTARTED, [limit, PER_MERCHANT]);
}

/** Deliveries `namespace` claimed over `olderThanS` ago and never attempted: their start may not have happened. */
export function staleClaims(namespace: string, olderThanS: number, limit: number, on: Sql = sql): Promise<DeliveryToStart[]> {
  return on.rows<DeliveryToStart>(STALE_CLAIMS, [namespace, olderThanS, limit]);
}

/**
 * Claims a delivery's generation for `namespace`'s dispatcher before its workflow is started: false
 * when another namespace holds it, or it was reopened or finished meanwhile. The claim is never given
 * back: a start that failed is made again by the same namespace (staleClaims), never by another.
 */
export async function claimDelivery(d: DeliveryToStart, namespace: string, on: Sql = sql): Promise<boolean> {
  return (await on.rowCount(CLAIM, [d.publicId, d.generation, namespace])) === 1;
}

const FOR_ATTEMPT = statement(
  `SELECT d.id, d.public_id AS "publicId", d.status, d.generation, d.attempts, d.partner_id AS "partnerId", d.workspace_id AS "workspaceId",
          e.public_id AS "endpointPublicId", e.id AS "endpointId", e.url, e.status AS "endpointStatus", e.deleted_at IS NOT NULL AS "endpointDeleted",
          e.api_version AS "apiVersion", e.secret, e.previous_secrets,
          o.public_id AS "eventPublicId", o.type AS "eventType", o.envelope, p.webhook_rate AS "partnerRate"
     FROM webhook_deliveries d
     JOIN webhook_endpoints e ON e.id = d.endpoint_id
     JOIN outbox_events o ON o.id = d.event_id
     JOIN partners p ON p.id = d.partner_id
    WHERE d.public_id = $1`,
);

export interface DeliveryForAttempt extends SealedSecrets {
  id: number;
  publicId: string;
  status: DeliveryStatus;
  generation: number;
  /** The highest attempt number recorded. */
  attempts: number;
  partnerId: number;
  workspaceId: number;
  endpointPublicId: string;
  endpointId: number;
  url: string;
  endpointStatus: string;
  endpointDeleted: boolean;
  apiVersion: string;
  eventPublicId: string;
  eventType: string;
  envelope: Record<string, unknown>;
  partnerRate: number | null;
}

/** Everything one attempt needs: the delivery, its endpoint (with sealed secrets), the event and the partner's rate. */
export async function deliveryForAttempt(publicId: string, on: Sql = sql): Promise<DeliveryForAttempt | undefined> {
  const [row] = await on.rows<DeliveryForAttempt>(FOR_ATTEMPT, [publicId]);
  return row;
}

const INSERT_ATTEMPT = statement(
  `INSERT INTO webhook_attempts (delivery_id, attempt, status_code, latency_ms, error, held_ms)
   VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (delivery_id, attempt) DO NOTHING`,
);
const RECORD_ON_DELIVERY = statement(
  `UPDATE webhook_deliveries
      SET attempts = GREATEST(attempts, $2), last_status_code = $3, last_latency_ms = $4, last_error = $5, last_attempt_at = now(),
          status = $6, completed_at = CASE WHEN $6 = 'pending' THEN NULL ELSE now() END
    WHERE id = $1 AND generation = $7 AND status = 'pending'`,
);
const ENDPOINT_SUCCEEDED = statement('UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL');
// A streak of failures starts at the first failure after a success, or after a gap with no failure
// (an endpoint with little traffic is not judged on two failures days apart). Written at most once a
// second: concurrent failing attempts do not all queue on the endpoint's row.
const ENDPOINT_FAILED = statement(
  `UPDATE webhook_endpoints
      SET failing_since = CASE WHEN failing_since IS NULL OR last_failed_at < now() - make_interval(secs => $2) THEN now() ELSE failing_since END,
          last_failed_at = now()
    WHERE id = $1 AND (failing_since IS NULL OR last_failed_at IS NULL OR last_failed_at < now() - interval '1 second')`,
);
const DISABLE_FAILING = statement(
  `UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = 'every delivery attempt failed for ' || $2::int || ' s', updated_at = now()
    WHERE id = $1 AND status = 'active' AND now() - failing_since >= make_interval(secs => $2)
   RETURNING status`,
);

export interface AttemptRecord {
  deliveryId: number;
  endpointId: number;
  generation: number;
  attempt: number;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  heldMs: number;
  delivered: boolean;
  /** The delivery's status after this attempt: pending while attempts remain. */
  status: DeliveryStatus;
}

export interface FailurePolicy {
  /** Every attempt failing for this long disables the endpoint. */
  disableAfterS: number;
  /** A gap this long without a failure ends a streak. */
  streakGapS: number;
}

/**
 * Records one attempt, the delivery's state after it and the endpoint's failure streak, together.
 * The delivery's row goes first and only while it is pending in this generation: its lock orders
 * concurrent recorders, and a finished status is never overwritten, nor an attempt added to it (a
 * resend's generation numbers its own). Undefined when nothing was recorded; else whether this
 * attempt disabled the endpoint.
 */
export function recordAttempt(a: AttemptRecord, policy: FailurePolicy): Promise<boolean | undefined> {
  return transaction(async (tx) => {
    if ((await tx.rowCount(RECORD_ON_DELIVERY, [a.deliveryId, a.attempt, a.statusCode, a.latencyMs, a.error, a.status, a.generation])) === 0) return undefined;
    await tx.rowCount(INSERT_ATTEMPT, [a.deliveryId, a.attempt, a.statusCode, a.latencyMs, a.error, a.heldMs]);
    if (a.delivered) {
      await tx.rowCount(ENDPOINT_SUCCEEDED, [a.endpointId]);
      return false;
    }
    await tx.rowCount(ENDPOINT_FAILED, [a.endpointId, policy.streakGapS]);
    return (await tx.rowCount(DISABLE_FAILING, [a.endpointId, policy.disableAfterS])) === 1;
  });
}

const SKIP = statement(`UPDATE webhook_deliveries SET status = 'skipped', completed_at = now() WHERE public_id = $1 AND status = 'pending' AND generation = $2`);

/** A pending delivery whose endpoint is disabled or removed: not attempted, kept for `recover`. */
export async function skipDelivery(publicId: string, generation: number, on: Sql = sql): Promise<void> {
  await on.rowCount(SKIP, [publicId, generation]);
}

const REOPEN = statement(
  `UPDATE webhook_deliveries SET status = 'pending', completed_at = NULL, started = false, claimed_by = NULL, claimed_at = NULL, generation = generation + 1
    WHERE public_id = ANY($1::text[]) AND status <> 'pending' RETURNING public_id AS "publicId"`,
);
const REOPEN_STRANDED = statement(
  `UPDATE webhook_deliveries SET started = false, claimed_by = NULL, claimed_at = NULL, generation = generation + 1 WHERE public_id = $1 AND status = 'pending' AND generation = $2 RETURNING public_id`,
);

/**
 * Makes finished deliveries pending and not started, so the dispatcher starts each anew (a resend),
 * attempts numbered on from the last; one still pending (its attempts in flight) is left alone. The
 * ids reopened.
 */
export async function reopenDeliveries(publicIds: string[], on: Sql = sql): Promise<string[]> {
  return (await on.rows<{ publicId: string }>(REOPEN, [publicIds])).map((r) => r.publicId);
}

/**
 * A pending delivery whose run of `generation` is not running (terminated): started anew by the
 * dispatcher. False when another request reopened it first.
 */
export async function reopenStranded(publicId: string, generation: number, on: Sql = sql): Promise<boolean> {
  return (await on.rowCount(REOPEN_STRANDED, [publicId, generation])) === 1;
}

const LIST_COLUMNS = `d.public_id, d.event_type, o.public_id AS event_id, e.public_id AS endpoint, w.public_id AS tenant, w.tenant_ref,
  d.status, d.attempts, d.last_status_code, d.last_latency_ms, d.last_error, d.created_at, d.last_attempt_at, d.completed_at,
  COALESCE((SELECT json_agg(json_build_object('attempt', a.attempt, 'status_code', a.status_code, 'latency_ms', a.latency_ms,
                                              'error', a.error, 'held_ms', a.held_ms, 'attempted_at', a.attempted_at) ORDER BY a.attempt)
              FROM webhook_attempts a WHERE a.delivery_id = d.id), '[]') AS attempt_log`;
const LIST_FROM = `webhook_deliveries d JOIN outbox_events o ON o.id = d.event_id JOIN webhook_endpoints e ON e.id = d.endpoint_id
                   JOIN workspaces w ON w.id = d.workspace_id`;
const ANCHOR = statement('SELECT id FROM webhook_deliveries WHERE public_id = $1 AND partner_id = $2');
const PAGE = statement(
  `SELECT ${LIST_COLUMNS} FROM ${LIST_FROM}
    WHERE d.partner_id = $1 AND d.id < $2
      AND ($4::text IS NULL OR d.status = $4) AND ($5::text IS NULL OR d.event_type = $5) AND ($6::text IS NULL OR w.tenant_ref = $6)
      AND ($7::text IS NULL OR e.public_id = $7)
    ORDER BY d.id DESC LIMIT $3`,
);
const FIND = statement(
  `SELECT ${LIST_COLUMNS}, d.generation, CASE WHEN e.deleted_at IS NOT NULL THEN 'deleted' ELSE e.status END AS endpoint_status
     FROM ${LIST_FROM} WHERE d.public_id = $1 AND d.partner_id = $2`,
);

export interface DeliveryFilters {
  status?: string;
  eventType?: string;
  tenantRef?: string;
  endpoint?: string;
}

/** Up to `limit` of the partner's deliveries, newest first, after `after`; undefined when `after` is not the partner's. */
export async function deliveryPage(partnerId: number, after: string | undefined, limit: number, f: DeliveryFilters, on: Sql = sql): Promise<DeliveryView[] | undefined> {
  const before = await pageStart(ANCHOR, partnerId, after, on);
  return before === undefined
    ? undefined
    : on.rows<DeliveryView>(PAGE, [partnerId, before, limit, f.status ?? null, f.eventType ?? null, f.tenantRef ?? null, f.endpoint ?? null]);
}

/** The partner's delivery, with its endpoint's status (`deleted` too); undefined for a missing one and another partner's alike. */
export async function findDelivery(partnerId: number, publicId: string, on: Sql = sql): Promise<(DeliveryView & { generation: number; endpoint_status: string }) | undefined> {
  const [row] = await on.rows<DeliveryView & { generation: number; endpoint_status: string }>(FIND, [publicId, partnerId]);
  return row;
}

const FAILED_IN_WINDOW = statement(
  `SELECT d.public_id AS "publicId"
     FROM webhook_deliveries d
    WHERE d.endpoint_id = (SELECT id FROM webhook_endpoints WHERE public_id = $1)
      AND d.status IN ('failed', 'skipped') AND d.created_at >= $2 AND d.created_at < $3 AND d.id > $4
    ORDER BY d.id LIMIT $5`,
);
const ID_OF = statement('SELECT id FROM webhook_deliveries WHERE public_id = $1');

/** The endpoint's failed or skipped deliveries created in [since, until), a page at a time after `afterId`. */
export async function failedDeliveriesIn(endpointPublicId: string, since: Date, until: Date, afterPublicId: string | undefined, limit: number, on: Sql = sql): Promise<string[]> {
  const afterId = afterPublicId ? ((await on.rows<{ id: number }>(ID_OF, [afterPublicId]))[0]?.id ?? 0) : 0;
  return (await on.rows<{ publicId: string }>(FAILED_IN_WINDOW, [endpointPublicId, since, until, afterId, limit])).map((r) => r.publicId);
}
