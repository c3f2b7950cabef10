import { QueryTypes, type Transaction } from 'sequelize';
import { mintId } from '../domain/ids';
import { Conversation } from './models';
import { recordEvent, type Correlation, type Tenant } from './outbox';
import { db } from './sequelize';

export interface OpenConversation {
  workspace: Tenant;
  agent: { id: number; publicId: string } | null;
  channel: string;
  externalRef?: string;
  internal?: boolean;
}

/**
 * Opens a conversation, or finds the one its external_ref already names: the unique
 * (workspace, external_ref) index makes concurrent resolutions agree on one row. A newly opened
 * public conversation writes conversation.created in the same transaction.
 */
export async function openConversation(t: Transaction, o: OpenConversation, correlation: Correlation): Promise<{ conversation: Conversation; created: boolean }> {
  const fields = { workspaceId: o.workspace.id, agentId: o.agent?.id ?? null, channel: o.channel, internal: o.internal ?? false };
  let conversation: Conversation;
  let created: boolean;
  if (o.externalRef) {
    const [row] = await db().query<{ id: number; inserted: boolean }>(
      `INSERT INTO conversations (public_id, workspace_id, agent_id, channel, external_ref, internal)
       VALUES (:publicId, :workspaceId, :agentId, :channel, :externalRef, :internal)
       ON CONFLICT (workspace_id, external_ref) DO UPDATE SET external_ref = EXCLUDED.external_ref
       RETURNING id, (xmax = 0) AS inserted`,
      { replacements: { ...fields, publicId: mintId('conversation'), externalRef: o.externalRef }, type: QueryTypes.SELECT, transaction: t },
    );
    conversation = (await Conversation.findByPk(row.id, { transaction: t }))!;
    created = row.inserted;
  } else {
    conversation = await Conversation.create({ ...fields, publicId: mintId('conversation') }, { transaction: t });
    created = true;
  }
  if (created && !conversation.internal) {
    await recordEvent(t, o.workspace, 'conversation.created', conversationObject(conversation, o.agent?.publicId ?? null), correlation);
  }
  return { conversation, created };
}

/** The public conversation object. */
export function conversationObject(c: Conversation, agentPublicId: string | null): Record<string, unknown> {
  return {
    id: c.publicId,
    object: 'conversation',
    agent: agentPublicId,
    channel: c.channel,
    external_ref: c.externalRef ?? null,
    created_at: c.createdAt.toISOString(),
  };
}
