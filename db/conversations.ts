import { mintId } from '../domain/ids';
import type { Outbox, Tenant } from './outbox';
import { statement, type Sql } from './sql';

export interface OpenConversation {
  workspace: Tenant;
  agent: { id: number; publicId: string } | null;
  channel: string;
  externalRef?: string;
  internal?: boolean;
}

/** A conversation row, as the run and the conversation endpoints need it. */
export interface ConversationRecord {
  id: number;
  publicId: string;
  agentId: number | null;
  channel: string;
  externalRef: string | null;
  internal: boolean;
  createdAt: Date;
}

const COLUMNS = 'id, public_id AS "publicId", agent_id AS "agentId", channel, external_ref AS "externalRef", internal, created_at AS "createdAt"';

// The (workspace, external_ref) unique index makes concurrent resolutions agree on one row; the
// no-op update lets RETURNING report the row either way, and xmax tells whether it was inserted.
const OPEN = statement(
  `INSERT INTO conversations (public_id, workspace_id, agent_id, channel, external_ref, internal)
   VALUES ($1, $2, $3, $4, $5, $6)
   ON CONFLICT (workspace_id, external_ref) DO UPDATE SET external_ref = EXCLUDED.external_ref
   RETURNING ${COLUMNS}, (xmax = 0) AS inserted`,
);

const BY_ID = statement(`SELECT ${COLUMNS} FROM conversations WHERE id = $1`);

/**
 * Opens a conversation, or finds the one its external_ref already names. A newly opened public
 * conversation adds conversation.created to the change's outbox.
 */
export async function openConversation(sql: Sql, o: OpenConversation, outbox: Outbox): Promise<{ conversation: ConversationRecord; created: boolean }> {
  const [{ inserted, ...conversation }] = await sql.rows<ConversationRecord & { inserted: boolean }>(OPEN, [
    mintId('conversation'),
    o.workspace.id,
    o.agent?.id ?? null,
    o.channel,
    o.externalRef ?? null,
    o.internal ?? false,
  ]);
  if (inserted && !conversation.internal) outbox.add('conversation.created', conversationObject(conversation, o.agent?.publicId ?? null));
  return { conversation, created: inserted };
}

export async function conversationById(sql: Sql, id: number): Promise<ConversationRecord> {
  const [conversation] = await sql.rows<ConversationRecord>(BY_ID, [id]);
  return conversation;
}

/** The public conversation object. */
export function conversationObject(c: Pick<ConversationRecord, 'publicId' | 'channel' | 'externalRef' | 'createdAt'>, agentPublicId: string | null): Record<string, unknown> {
  return {
    id: c.publicId,
    object: 'conversation',
    agent: agentPublicId,
    channel: c.channel,
    external_ref: c.externalRef ?? null,
    created_at: c.createdAt.toISOString(),
  };
}
