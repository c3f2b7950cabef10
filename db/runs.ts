import { QueryTypes } from 'sequelize';
import type { RunStatus } from '../domain/errors';
import type { OutputItem, RunKind } from '../domain/runs';
import type { Usage } from '../domain/usage';
import { db } from './sequelize';

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
}

/** A recorded run, scoped to a workspace: another workspace's run is as absent as a missing one. */
export async function findRun(workspaceId: number, publicId: string): Promise<RunRow | undefined> {
  const [row] = await db().query<RunRow>(
    `SELECT r.public_id, r.status, r.kind, a.public_id AS agent, r.agent_version, c.public_id AS conversation, c.internal,
            r.output, r.usage, r.metadata, r.request_id, r.trace_id
       FROM runs r JOIN agents a ON a.id = r.agent_id LEFT JOIN conversations c ON c.id = r.conversation_id
      WHERE r.public_id = :publicId AND r.workspace_id = :workspaceId`,
    { replacements: { publicId, workspaceId }, type: QueryTypes.SELECT },
  );
  return row;
}

/** A run left open (queued or running), with what settling it needs. */
export interface OpenRun {
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

/** Open runs that began at least `minAgeMs` ago, oldest first. */
export async function openRunsOlderThan(minAgeMs: number, limit: number): Promise<OpenRun[]> {
  const rows = await db().query<Record<string, any>>(
    `SELECT r.public_id, r.kind, r.channel, r.request_id, r.trace_id, r.metadata, r.created_at, r.agent_version,
            w.id AS workspace_id, w.public_id AS workspace_public_id, w.tenant_ref, p.public_id AS partner_public_id,
            a.id AS agent_id, a.public_id AS agent_public_id
       FROM runs r
       JOIN workspaces w ON w.id = r.workspace_id
       JOIN agents a ON a.id = r.agent_id
       LEFT JOIN partners p ON p.id = w.partner_id
      WHERE r.status IN ('queued', 'running') AND coalesce(r.started_at, r.created_at) < now() - make_interval(secs => :minAgeS)
      ORDER BY r.id
      LIMIT :limit`,
    { replacements: { minAgeS: minAgeMs / 1000, limit }, type: QueryTypes.SELECT },
  );
  return rows.map((r) => ({
    runId: r.public_id,
    kind: r.kind,
    channel: r.channel,
    requestId: r.request_id,
    traceId: r.trace_id,
    metadata: r.metadata,
    createdAt: r.created_at,
    workspace: { id: Number(r.workspace_id), publicId: r.workspace_public_id, tenantRef: r.tenant_ref, partnerPublicId: r.partner_public_id },
    agent: { id: Number(r.agent_id), publicId: r.agent_public_id, version: r.agent_version },
  }));
}
