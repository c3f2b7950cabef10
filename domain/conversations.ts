import { anyValue, closed, constant, oneOfValues, orNull, publicId, text, timestamp, type Static } from './shape';

export const CHANNELS = ['', 'api', 'web', 'website', 'whatsapp', 'phone', 'voice'] as const;

/** A conversation as the API shows it and as conversation.created carries it. */
export interface ConversationView {
  publicId: string;
  agentPublicId: string | null;
  channel: string;
  externalRef: string | null;
  createdAt: Date;
}

/** The public conversation object: its shape, declared once for the view and the OpenAPI document. */
export const Conversation = closed({
  id: publicId('conversation'),
  object: constant('conversation'),
  agent: orNull(text("The conversation's assistant; null when it has none.")),
  channel: oneOfValues(CHANNELS),
  external_ref: orNull(text()),
  created_at: timestamp(),
});

export function conversationObject(c: ConversationView): Static<typeof Conversation> {
  return {
    id: c.publicId,
    object: 'conversation',
    agent: c.agentPublicId,
    channel: c.channel as Static<typeof Conversation>['channel'],
    external_ref: c.externalRef ?? null,
    created_at: c.createdAt.toISOString(),
  };
}

/** A message of a conversation, as its list shows it. */
export const Message = closed({
  id: publicId('message', 'Also the cursor of the message list (`after`).'),
  object: constant('message'),
  conversation: publicId('conversation'),
  role: oneOfValues(['user', 'assistant'] as const),
  content: anyValue("The user's input (a string or a structured payload), or the assistant's output items."),
  run: orNull(publicId('run')),
  created_at: timestamp(),
});

export function messageObject(m: { publicId: string; role: 'user' | 'assistant'; content: unknown; run: string | null; createdAt: Date }, conversationPublicId: string): Static<typeof Message> {
  return { id: m.publicId, object: 'message', conversation: conversationPublicId, role: m.role, content: m.content, run: m.run, created_at: m.createdAt.toISOString() };
}
