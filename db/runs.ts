import { QueryTypes } from 'sequelize';
import type { RunStatus } from '../domain/errors';
import type { OutputItem, RunKind, Usage } from '../domain/runs';
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
