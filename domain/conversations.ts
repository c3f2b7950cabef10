/** A conversation as the API shows it and as conversation.created carries it. */
export interface ConversationView {
  publicId: string;
  agentPublicId: string | null;
  channel: string;
  externalRef: string | null;
  createdAt: Date;
}

/** The public conversation object. */
export function conversationObject(c: ConversationView): Record<string, unknown> {
  return {
    id: c.publicId,
    object: 'conversation',
    agent: c.agentPublicId,
    channel: c.channel,
    external_ref: c.externalRef ?? null,
    created_at: c.createdAt.toISOString(),
  };
}
