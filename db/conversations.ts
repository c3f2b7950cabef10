import { conversationObject, type ConversationView } from '../domain/conversations';
import { mintId } from '../domain/ids';
import type { Outbox, Tenant } from './outbox';
import { pageStart } from './paging';
import { sql, statement, type Sql } from './sql';

export interface OpenConversation {
  workspace: Tenant;
  agent: { id: number; publicId: string } | null;
  channel: string;
  externalRef?: string;
  internal?: boolean;
}

/** A conversation row with its agent's public id, as the runs and the conversation endpoints need it. */
export interface ConversationRecord extends ConversationView {
  id: number;
  agentId: number | null;
  internal: boolean;
}

const COLUMNS = `c.id, c.public_id AS "publicId", c.agent_id AS "agentId", a.public_id AS "agentPublicId", c.channel,
  c.external_ref AS "externalRef", c.internal, c.created_at AS "createdAt"`;

// The (workspace, external_ref) unique index makes concurrent resolutions agree on one row; the
// no-op update lets RETURNING report the row either way, and xmax tells whether it was inserted.
const OPEN = statement(
  `WITH c AS (
     INSERT INTO conversations (public_id, workspace_id, agent_id, channel, external_ref, internal)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (workspace_id, external_ref) DO UPDATE SET external_ref = EXCLUDED.external_ref
     RETURNING *, (xmax = 0) AS inserted
   )
   SELECT ${COLUMNS}, c.inserted FROM c LEFT JOIN agents a ON a.id = c.agent_id`,
);

/**
 * Opens a conversation, or finds the one its external_ref already names. A newly opened public
 * conversation adds conversation.created to the change's outbox.
 */
export async function openConversation(o: OpenConversation, outbox: Outbox, on: Sql = sql): Promise<{ conversation: ConversationRecord; created: boolean }> {
  const [{ inserted, ...conversation }] = await on.rows<ConversationRecord & { inserted: boolean }>(OPEN, [
    mintId('conversation'),
    o.workspace.id,
    o.agent?.id ?? null,
    o.channel,
    // Internal conversations (behind stateless /responses) never take an external_ref: they must not
    // resolve to, or block, a public conversation of the same reference.
    o.internal ? null : o.externalRef ?? null,
    o.internal ?? false,
  ]);
  if (inserted && !conversation.internal) outbox.add('conversation.created', conversationObject(conversation));
  return { conversation, created: inserted };
}

const BY_ID = statement(`SELECT ${COLUMNS} FROM conversations c LEFT JOIN agents a ON a.id = c.agent_id WHERE c.id = $1`);

export async function conversationById(id: number, on: Sql = sql): Promise<ConversationRecord> {
  const [conversation] = await on.rows<ConversationRecord>(BY_ID, [id]);
  return conversation;
}

const PUBLIC_IN_WORKSPACE = statement(
  `SELECT ${COLUMNS} FROM conversations c LEFT JOIN agents a ON a.id = c.agent_id
    WHERE c.public_id = $1 AND c.workspace_id = $2 AND NOT c.internal`,
);

/** A public conversation of this workspace; internal ones (behind stateless /responses) are never reachable by id. */
export async function findPublicConversation(workspaceId: number, publicId: string, on: Sql = sql): Promise<ConversationRecord | undefined> {
  const [row] = await on.rows<ConversationRecord>(PUBLIC_IN_WORKSPACE, [publicId, workspaceId]);
  return row;
}

/** A conversation as the dashboard lists it: metadata only, never message content. */
export interface ConversationListing {
  public_id: string;
  agent: string | null;
  channel: string;
  external_ref: string | null;
  messages: number;
  created_at: Date;
}

const CONVERSATION_ANCHOR = statement('SELECT id FROM conversations WHERE public_id = $1 AND workspace_id = $2 AND NOT internal');
const CONVERSATION_PAGE = statement(
  `SELECT c.public_id, a.public_id AS agent, c.channel, c.external_ref, c.created_at,
          (SELECT count(*) FROM messages m WHERE m.conversation_id = c.id)::int AS messages
     FROM conversations c LEFT JOIN agents a ON a.id = c.agent_id
    WHERE c.workspace_id = $1 AND c.id < $2 AND NOT c.internal
    ORDER BY c.id DESC
    LIMIT $3`,
);

/** Up to `limit` of the workspace's public conversations, newest first, after `after` (undefined: not the workspace's). */
export async function conversationPage(workspaceId: number, after: string | undefined, limit: number, on: Sql = sql): Promise<ConversationListing[] | undefined> {
  const before = await pageStart(CONVERSATION_ANCHOR, workspaceId, after, on);
  return before === undefined ? undefined : on.rows<ConversationListing>(CONVERSATION_PAGE, [workspaceId, before, limit]);
}
