import { mintId } from '../domain/ids';
import type { RequiredCall } from '../domain/actions';
import type { PassageRef } from '../domain/knowledge';
import { invalidRequest, type RunStatus } from '../domain/errors';
import type { OutputItem, RunKind } from '../domain/runs';
import type { IncompleteReason } from '../domain/runResponse';
import type { Usage } from '../domain/usage';
import { pageStart } from './paging';
import { sql, statement, withStatementTimeout, type Sql } from './sql';

/**
 * The runs table: every write to it is here. A run is inserted when a worker takes it up
 * (queued → running), gathers the usage of calls cut short, and is settled once, together with its
 * ledger line, its log entry and the debit of its workspace.
 */

const INSERT = statement(
  `INSERT INTO runs (public_id, workspace_id, agent_id, agent_version, conversation_id, kind, status, channel, request_id, trace_id, metadata, resource_id, started_at)
   VALUES ($1, $2, $3, $4, $5, $6, 'running', $7, $8, $9, $10, $11, now())
   RETURNING id`,
);

export interface NewRun {
  publicId: string;
  workspaceId: number;
  agentId: number;
  agentVersion: number;
  conversationId: number;
  kind: RunKind;
  channel: string;
  requestId: string;
  traceId: string;
  metadata: Record<string, unknown>;
  resourceId: string | null;
}

/** Records a run as running; returns its key. */
export async function insertRun(r: NewRun, on: Sql = sql): Promise<number> {
  const [run] = await on.rows<{ id: number }>(INSERT, [
    r.publicId, r.workspaceId, r.agentId, r.agentVersion, r.conversationId, r.kind, r.channel, r.requestId, r.traceId, JSON.stringify(r.metadata), r.resourceId,
  ]);
  return run.id;
}

// One statement, so no BEGIN, lock or COMMIT: a run with an internal conversation of its own (the
// conversation opened with it), unless the run is recorded already; then nothing is written.
const RECORD_WITH_OWN_CONVERSATION = statement(
  `WITH c AS (
     INSERT INTO conversations (public_id, workspace_id, agent_id, channel, external_ref, internal)
     SELECT $11, $2, $3, $6, NULL, true WHERE NOT EXISTS (SELECT 1 FROM runs WHERE public_id = $1)
     RETURNING id
   ), r AS (
     INSERT INTO runs (public_id, workspace_id, agent_id, agent_version, conversation_id, kind, status, channel, request_id, trace_id, metadata, resource_id, started_at)
     SELECT $1, $2, $3, $4, c.id, $5, 'running', $6, $7, $8, $9, $10, now() FROM c
     RETURNING id, conversation_id
   )
   SELECT id AS "runKey", conversation_id AS "conversationId" FROM r`,
);

/**
 * Records a run that is not a conversation's turn (a stateless response, a report, an extraction
 * segment) with its internal conversation, in one statement; undefined when the run was recorded
 * before (a retried call), which the caller then finds, locked, in a transaction.
 */
export async function recordRunWithOwnConversation(r: Omit<NewRun, 'conversationId'>, on: Sql = sql): Promise<{ runKey: number; conversationId: number } | undefined> {
  const [row] = await on.rows<{ runKey: string; conversationId: string }>(RECORD_WITH_OWN_CONVERSATION, [
    r.publicId, r.workspaceId, r.agentId, r.agentVersion, r.kind, r.channel, r.requestId, r.traceId, JSON.stringify(r.metadata), r.resourceId, mintId('conversation'),
  ]);
  return row && { runKey: Number(row.runKey), conversationId: Number(row.conversationId) };
}

/** A recorded run, locked for its settlement, with its conversation. */
export interface LockedRun {
  runKey: number;
  status: RunStatus;
  usage: Usage;
  consumedUsage: Usage | null;
  conversationId: number;
  conversationPublicId: string;
  internal: boolean;
  conversationChannel: string;
}

const LOCK = statement(
  `SELECT r.id AS "runKey", r.status, r.usage, r.consumed_usage AS "consumedUsage",
          c.id AS "conversationId", c.public_id AS "conversationPublicId", c.internal, c.channel AS "conversationChannel"
     FROM runs r JOIN conversations c ON c.id = r.conversation_id
    WHERE r.public_id = $1
      FOR UPDATE OF r`,
);

/** Locks the run (inside the caller's transaction); undefined when it was never recorded. */
export async function lockRun(publicId: string, on: Sql): Promise<LockedRun | undefined> {
  const [row] = await on.rows<LockedRun>(LOCK, [publicId]);
  return row;
}

/**
 * The settlement's writes in one statement: the run's final state, its one ledger line, its log entry,
 * and its workspace's balance, which gets back the run's reservation less what the run is charged.
 * A reserved run is charged its real cost up to what it reserved, so a balance never goes below zero,
 * and its log entry records what was left uncharged (uncharged_credits); a run without a reservation (started before reservations existed) is charged its real cost.
 */
const SETTLE = statement(
  `WITH go AS (
     SELECT NOT ($20::boolean AND EXISTS (SELECT 1 FROM run_cancel_requests WHERE run_public_id = $18)) AS ok
   ), reserved AS (
     DELETE FROM credit_reservations WHERE run_public_id = $18 AND (SELECT ok FROM go) RETURNING credits
   ), charge AS (
     SELECT CASE WHEN $24::boolean THEN 0 ELSE COALESCE((SELECT LEAST($9::bigint, credits) FROM reserved), $9::bigint) END AS credits, COALESCE((SELECT credits FROM reserved), 0) AS held
   ), run AS (
     UPDATE runs SET status = $3, output = $4, usage = $5, error_code = $6, error_message = $7, completed_at = now(), reconciled_at = CASE WHEN $23::boolean THEN now() END,
                     held_credits = (SELECT held FROM charge), incomplete_reason = $26
      WHERE id = $2 AND (SELECT ok FROM go)
   ), line AS (
     INSERT INTO ledger_lines (workspace_id, run_id, line, credits, input_tokens, output_tokens) SELECT $1, $2, $8, charge.credits, $10, $11 FROM charge WHERE (SELECT ok FROM go)
   ), log AS (
     INSERT INTO run_logs (public_id, workspace_id, run_id, status, latency_ms, model, input_tokens, output_tokens, total_tokens, cached_tokens, tool_names, error_code, knowledge, uncharged_credits, refused, usage_estimated, history_omitted)
     SELECT $12, $1, $2, $3, $13, $14, $10, $11, $15, $16, $17, $6, $19, $9::bigint - charge.credits, $21, $22, $25 FROM charge WHERE (SELECT ok FROM go)
   )
   UPDATE workspaces SET credits = credits + (SELECT held - credits FROM charge) WHERE id = $1 AND (SELECT ok FROM go)
   RETURNING credits, usage_threshold AS "usageThreshold", (SELECT credits FROM charge) AS charged`,
);

export interface RunSettlement {
  workspaceId: number;
  runKey: number;
  runId: string;
  status: Exclude<RunStatus, 'queued' | 'running'>;
  /** null keeps no copy of the exchange (stateless responses). */
  output: OutputItem[] | null;
  usage: Usage;
  error: { code: string; message: string } | null;
  line: string;
  /** The run's real cost; what it is charged is this, up to what it reserved. */
  credits: number;
  logId: string;
  latencyMs: number;
  model: string;
  toolNames: string[];
  /** Retrieved chunks: ids and ranks only. */
  knowledge: PassageRef[];
  /**
   * Write nothing if a cancel was recorded for the run (run_cancel_requests). Checked inside this
   * statement, which begins after the caller took the run's lock, so its snapshot sees a cancel that
   * committed while the caller waited for that lock (the lock statement's own snapshot would not).
   */
  unlessCancelRequested: boolean;
  /** For the log entry: the output is a refusal; the usage was counted by the service (the provider reported none). */
  refused: boolean;
  usageEstimated: boolean;
  /** The reconciler settles it (its workflow ended without settling). */
  reconciled: boolean;
  /** The run failed through the service's fault: charged nothing, its whole cost in the log's uncharged_credits beside the error code. */
  waived: boolean;
  /** Earlier messages of the conversation left out of its calls to fit the model's window (or the run's hold). */
  historyOmitted: number;
  /** The answer stopped at its output cap (RunResponse.incomplete_details). */
  incompleteReason: IncompleteReason | null;
}

/**
 * Settles a locked run (inside the caller's transaction); returns what it was charged and the
 * workspace's new balance and threshold, or undefined when it gave way to a recorded cancel.
 */
export async function settleRunRecord(s: RunSettlement, on: Sql): Promise<{ charged: number; credits: number; usageThreshold: number | null } | undefined> {
  const [balance] = await on.rows<{ charged: number; credits: number; usageThreshold: number | null }>(SETTLE, [
    s.workspaceId,
    s.runKey,
    s.status,
    s.output === null ? null : JSON.stringify(s.output),
    JSON.stringify(s.usage),
    s.error?.code ?? null,
    s.error?.message ?? null,
    s.line,
    s.credits,
    s.usage.input_tokens,
    s.usage.output_tokens,
    s.logId,
    s.latencyMs,
    s.model,
    s.usage.total_tokens,
    s.usage.cached_tokens,
    s.toolNames,
    s.runId,
    JSON.stringify(s.knowledge),
    s.unlessCancelRequested,
    s.refused,
    s.usageEstimated,
    s.reconciled,
    s.waived,
    s.historyOmitted,
    s.incompleteReason,
  ]);
  return balance;
}

const ADD_CONSUMED = statement(
  `UPDATE runs SET consumed_usage = jsonb_build_object(
      'input_tokens', COALESCE((consumed_usage->>'input_tokens')::int, 0) + $2,
      'output_tokens', COALESCE((consumed_usage->>'output_tokens')::int, 0) + $3,
      'total_tokens', COALESCE((consumed_usage->>'total_tokens')::int, 0) + $4,
      'cached_tokens', 0)
    WHERE public_id = $1 AND status = 'running'`,
);

/** Adds what a call cut short consumed (it reported nothing); the settlement bills it. */
export async function addConsumedUsage(publicId: string, usage: Usage, on: Sql = sql): Promise<void> {
  await on.rows(ADD_CONSUMED, [publicId, usage.input_tokens, usage.output_tokens, usage.total_tokens]);
}

export interface RunRow {
  public_id: string;
  status: RunStatus;
  kind: RunKind;
  agent: string;
  agent_version: number;
  conversation: string | null;
  internal: boolean | null;
  output: OutputItem[] | null;
  usage: Usage;
  metadata: Record<string, unknown>;
  request_id: string;
  trace_id: string;
  incomplete_reason: IncompleteReason | null;
  /** The calls a running run waits on now (run_actions), oldest first; none once it has ended, however it ended. */
  pending: RequiredCall[];
}

// The pending calls in the same read: every poll of a running run asks, and few runs ever wait.
const IN_WORKSPACE = statement(
  `SELECT r.public_id, r.status, r.kind, a.public_id AS agent, r.agent_version, c.public_id AS conversation, c.internal,
          r.output, r.usage, r.metadata, r.request_id, r.trace_id, r.incomplete_reason,
          CASE WHEN r.status = 'running' THEN
            (SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object('call_id', x.call_id, 'type', x.type, 'tool', x.tool, 'arguments', x.arguments, 'arguments_sha256', x.arguments_sha256, 'expires_at', x.expires_at)) ORDER BY x.id)
               FROM run_actions x WHERE x.run_id = r.id AND x.status = 'pending')
          END AS pending
     FROM runs r JOIN agents a ON a.id = r.agent_id LEFT JOIN conversations c ON c.id = r.conversation_id
    WHERE r.public_id = $1 AND r.workspace_id = $2`,
);

/** A recorded run, scoped to a workspace: another workspace's run is as absent as a missing one. */
export async function findRun(workspaceId: number, publicId: string, on: Sql = sql): Promise<RunRow | undefined> {
  const [row] = await on.rows<Omit<RunRow, 'pending'> & { pending: RequiredCall[] | null }>(IN_WORKSPACE, [publicId, workspaceId]);
  return row && { ...row, pending: (row.pending ?? []).map((call) => ({ ...call, expires_at: new Date(call.expires_at).toISOString() })) };
}

const STATUS = statement('SELECT status FROM runs WHERE public_id = $1');

/** The recorded status of a run, or undefined when no worker ever recorded it. */
export async function runStatus(publicId: string, on: Sql = sql): Promise<RunStatus | undefined> {
  const [row] = await on.rows<{ status: RunStatus }>(STATUS, [publicId]);
  return row?.status;
}

const WORKSPACE_OF = statement('SELECT workspace_id FROM runs WHERE public_id = $1');

/** The workspace a recorded run is of: a limited model provider is shared fairly by workspace (activities/providers/pacing.ts). */
export async function runWorkspace(publicId: string, on: Sql = sql): Promise<number | undefined> {
  const [row] = await on.rows<{ workspace_id: number }>(WORKSPACE_OF, [publicId]);
  return row?.workspace_id;
}

/** A run left open (queued or running), with what settling it needs. */
export interface OpenRun {
  runKey: number;
  runId: string;
  kind: RunKind;
  channel: string;
  requestId: string;
  traceId: string;
  metadata: Record<string, unknown>;
  createdAt: Date;
  workspace: { id: number; publicId: string; tenantRef: string | null; partnerPublicId: string | null };
  agent: { id: number; publicId: string; version: number };
}

// A run that waits for people on a call not yet expired is its workflow's to settle: not described
// every pass while it waits, for days perhaps (one terminated meanwhile is settled once the call expires).
const OPEN_OLDER_THAN = statement(
  `SELECT r.id, r.public_id, r.kind, r.channel, r.request_id, r.trace_id, r.metadata, r.created_at, r.agent_version,
          w.id AS workspace_id, w.public_id AS workspace_public_id, w.tenant_ref, p.public_id AS partner_public_id,
          a.id AS agent_id, a.public_id AS agent_public_id
     FROM runs r
     JOIN workspaces w ON w.id = r.workspace_id
     JOIN agents a ON a.id = r.agent_id
     LEFT JOIN partners p ON p.id = w.partner_id
    WHERE r.status IN ('queued', 'running') AND coalesce(r.started_at, r.created_at) < now() - make_interval(secs => $1) AND r.id > $2
      AND NOT EXISTS (SELECT 1 FROM run_actions x WHERE x.run_id = r.id AND x.status = 'pending' AND x.expires_at > now())
    ORDER BY r.id
    LIMIT $3`,
);

/** Open runs that began at least `minAgeMs` ago, in key order after `afterKey`. */
export async function openRunsOlderThan(minAgeMs: number, afterKey: number, limit: number, on: Sql = sql): Promise<OpenRun[]> {
  const rows = await on.rows<Record<string, any>>(OPEN_OLDER_THAN, [minAgeMs / 1000, afterKey, limit]);
  return rows.map((r) => ({
    runKey: r.id,
    runId: r.public_id,
    kind: r.kind,
    channel: r.channel,
    requestId: r.request_id,
    traceId: r.trace_id,
    metadata: r.metadata,
    createdAt: r.created_at,
    workspace: { id: r.workspace_id, publicId: r.workspace_public_id, tenantRef: r.tenant_ref, partnerPublicId: r.partner_public_id },
    agent: { id: r.agent_id, publicId: r.agent_public_id, version: r.agent_version },
  }));
}

/** A run as the dashboard lists it: metadata only, never input or output. */
export interface RunListing {
  public_id: string;
  kind: RunKind;
  status: RunStatus;
  agent: string;
  agent_version: number;
  channel: string;
  total_tokens: number;
  error_code: string | null;
  /** Settled by the reconciler. */
  reconciled: boolean;
  /** How long it waited in the queue (until it started; never started: until it ended, or until now). */
  queued_ms: number;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
}

/** Filters of the run lists (the dashboard's, and GET /api/v2/runs: runs that need attention). */
export interface RunFilters {
  /** Kinds the caller may read (each kind needs its own scope); unset: every kind. */
  kinds?: string[];
  statuses?: string[];
  agent?: string;
  createdAfter?: Date;
  createdBefore?: Date;
  /** Runs that waited in the queue (until they started, or still) longer than this. */
  queuedLongerThanMs?: number;
  /** Settled by the reconciler (their workflow ended without settling them), or not. */
  reconciled?: boolean;
}

const RUN_ANCHOR = statement('SELECT id FROM runs WHERE public_id = $1 AND workspace_id = $2');

/**
 * The most runs one page looks at, however few pass its filters: a filter that matches nothing in a
 * long history (created_before a date before the workspace existed, a rare status) answers a short
 * page and a cursor to look further, rather than read every run the workspace ever had. The page's
 * statement is stopped after RUN_PAGE_TIMEOUT_MS besides.
 */
export const RUN_PAGE_SCAN = 5_000;
const RUN_PAGE_TIMEOUT_MS = 5_000;

// What the indexes serve (the workspace, and the id, the creation time or the status) is filtered in
// the bounded scan; the rest of the filters apply to what it found.
const SCANNED = `SELECT * FROM runs r
    WHERE r.workspace_id = $1 AND r.id < $2
      AND ($3::text[] IS NULL OR r.kind = ANY($3::text[])) AND ($4::text[] IS NULL OR r.status = ANY($4::text[]))
      AND ($5::timestamptz IS NULL OR r.created_at >= $5) AND ($6::timestamptz IS NULL OR r.created_at < $6)
    ORDER BY r.id DESC`;

// A run's wait in the queue: until it started, or (never started) until it ended, or until now.
const RUN_PAGE = statement(
  `WITH scanned AS (${SCANNED} LIMIT ${RUN_PAGE_SCAN})
   SELECT r.public_id, r.kind, r.status, a.public_id AS agent, r.agent_version, r.channel, (r.usage->>'total_tokens')::int AS total_tokens,
          r.error_code, r.reconciled_at IS NOT NULL AS reconciled, r.created_at, r.started_at, r.completed_at,
          floor(EXTRACT(EPOCH FROM (COALESCE(r.started_at, r.completed_at, now()) - r.created_at)) * 1000)::float8 AS queued_ms
     FROM scanned r JOIN agents a ON a.id = r.agent_id
    WHERE ($8::text IS NULL OR a.public_id = $8)
      AND ($9::bigint IS NULL OR COALESCE(r.started_at, r.completed_at, now()) - r.created_at > make_interval(secs => $9 / 1000.0))
      AND ($10::boolean IS NULL OR (r.reconciled_at IS NOT NULL) = $10)
    ORDER BY r.id DESC
    LIMIT $7`,
);

/** The last run a page's scan reached, when it reached its bound: the next page looks on from there. */
const SCAN_EDGE = statement(`SELECT public_id FROM (${SCANNED} OFFSET ${RUN_PAGE_SCAN - 1} LIMIT 1) edge`);

/**
 * Up to `limit` of the workspace's runs that pass the filters, newest first, after the run `after`
 * (undefined: not the workspace's), from at most RUN_PAGE_SCAN of them; `scannedTo` names the last
 * run looked at when the page is short because the scan reached its bound.
 */
export async function runPage(workspaceId: number, after: string | undefined, limit: number, f: RunFilters = {}): Promise<{ rows: RunListing[]; scannedTo?: string } | undefined> {
  const page = withStatementTimeout(RUN_PAGE_TIMEOUT_MS, async (tx) => {
    const before = await pageStart(RUN_ANCHOR, workspaceId, after, tx);
    if (before === undefined) return undefined;
    const scan = [workspaceId, before, f.kinds ?? null, f.statuses ?? null, f.createdAfter ?? null, f.createdBefore ?? null];
    const rows = await tx.rows<RunListing>(RUN_PAGE, [...scan, limit, f.agent ?? null, f.queuedLongerThanMs ?? null, f.reconciled ?? null]);
    if (rows.length >= limit) return { rows };
    const [edge] = await tx.rows<{ public_id: string }>(SCAN_EDGE, scan);
    return { rows, ...(edge && { scannedTo: edge.public_id }) };
  });
  // Stopped by its statement timeout (57014): the caller narrows it.
  return page.catch((err: unknown) => {
    if ((err as { code?: string }).code === '57014') throw invalidRequest('Finding this page took too long: narrow it (created_after, created_before, agent, status, kind).');
    throw err;
  });
}

/** One of a workspace's runs as the dashboard's run page shows it: metadata, tokens and credits, never content. */
export interface RunDetail extends RunListing {
  agent_name: string;
  usage: Usage | null;
  /** What it held: its reservation while in flight, what the reservation was once settled (null: none). */
  held_credits: number | null;
  /** What it was charged (null: not settled). */
  charged_credits: number | null;
  /** Retrieved chunks, ids and ranks (from its log entry). */
  knowledge: PassageRef[];
  tool_names: string[];
  /** Why a completed run is unfinished: its output cap, or the limit that ended it (domain/limits.ts). */
  incomplete_reason: IncompleteReason | null;
}

const RUN_DETAIL = statement(
  `SELECT r.public_id, r.kind, r.status, a.public_id AS agent, a.name AS agent_name, r.agent_version, r.channel, (r.usage->>'total_tokens')::int AS total_tokens,
          r.usage, r.error_code, r.reconciled_at IS NOT NULL AS reconciled, r.created_at, r.started_at, r.completed_at,
          floor(EXTRACT(EPOCH FROM (COALESCE(r.started_at, r.completed_at, now()) - r.created_at)) * 1000)::float8 AS queued_ms,
          COALESCE(r.held_credits, (SELECT c.credits FROM credit_reservations c WHERE c.run_public_id = r.public_id))::float8 AS held_credits,
          (SELECT sum(l.credits) FROM ledger_lines l WHERE l.run_id = r.id)::float8 AS charged_credits,
          COALESCE(g.knowledge, '[]'::jsonb) AS knowledge, COALESCE(g.tool_names, '{}') AS tool_names, r.incomplete_reason
     FROM runs r JOIN agents a ON a.id = r.agent_id LEFT JOIN run_logs g ON g.run_id = r.id
    WHERE r.workspace_id = $1 AND r.public_id = $2`,
);

export async function runDetail(workspaceId: number, publicId: string, on: Sql = sql): Promise<RunDetail | undefined> {
  const [row] = await on.rows<RunDetail>(RUN_DETAIL, [workspaceId, publicId]);
  return row;
}
