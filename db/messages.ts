import { mintId } from '../domain/ids';
import { sql, statement, type Sql } from './sql';

const INSERT = statement('INSERT INTO messages (public_id, conversation_id, run_id, role, content) VALUES ($1, $2, $3, $4, $5)');

/** Writes one message of a run's conversation; returns its public id. */
export async function insertMessage(m: { conversationId: number; runKey: number; role: 'user' | 'assistant'; content: unknown }, on: Sql = sql): Promise<string> {
  const id = mintId('message');
  await on.rows(INSERT, [id, m.conversationId, m.runKey, m.role, JSON.stringify(m.content)]);
  return id;
}

export interface MessageRecord {
  publicId: string;
  role: 'user' | 'assistant';
  content: unknown;
  run: string | null;
  createdAt: Date;
}

const PAGE = statement(
  `SELECT m.public_id AS "publicId", m.role, m.content, r.public_id AS run, m.created_at AS "createdAt"
     FROM messages m LEFT JOIN runs r ON r.id = m.run_id
    WHERE m.conversation_id = $1
      AND ($2::text IS NULL OR m.id > (SELECT id FROM messages WHERE public_id = $2 AND conversation_id = $1))
    ORDER BY m.id
    LIMIT $3`,
);

/** Up to `limit` messages of a conversation in order, after the message `after` when given. */
export function messagePage(conversationId: number, after: string | undefined, limit: number, on: Sql = sql): Promise<MessageRecord[]> {
  return on.rows<MessageRecord>(PAGE, [conversationId, after ?? null, limit]);
}

const RECENT = statement(
  `SELECT role, content FROM (
     SELECT id, role, content FROM messages WHERE conversation_id = $1 AND run_id IS DISTINCT FROM $2 ORDER BY id DESC LIMIT $3
   ) m ORDER BY id`,
);

/** The conversation's last `limit` messages, oldest first, leaving out those of one run (the one asking). */
export function recentMessages(conversationId: number, exceptRunKey: number, limit: number, on: Sql = sql): Promise<{ role: 'user' | 'assistant'; content: unknown }[]> {
  return on.rows(RECENT, [conversationId, exceptRunKey, limit]);
}
