import { CreateConversation, ListMessages, PostMessage, ReadConversation } from '../../routes/conversations/schema';
import { Conversation, Message } from '../../../domain/conversations';
import { cursorList } from '../components';
import { EXECUTION_ERRORS, executionResponses } from '../execution';
import { ref } from '../jsonSchema';
import { json, operation, type Resource } from '../operation';

export const conversations: Resource = {
  schemas: { Conversation, Message },
  paths: {
    '/api/v2/conversations': {
      post: operation('post', {
        id: 'createConversation',
        summary: 'Open or resolve a conversation',
        description: 'Opens a conversation (201), or resolves the one `external_ref` already names (200).',
        tag: 'Conversations',
        access: { credential: 'workspace', scopes: ['conversations:create'] },
        request: CreateConversation,
        responses: { '201': json('Opened.', ref('Conversation')), '200': json('`external_ref` resolved an existing conversation.', ref('Conversation')) },
        errors: ['agent_not_found'],
      }),
    },
    '/api/v2/conversations/{id}': {
      get: operation('get', {
        id: 'getConversation',
        summary: 'Read a conversation',
        tag: 'Conversations',
        access: { credential: 'workspace', scopes: ['conversations:read'] },
        request: ReadConversation,
        responses: { '200': json('The conversation.', ref('Conversation')) },
        errors: ['conversation_not_found'],
      }),
    },
    '/api/v2/conversations/{id}/messages': {
      post: operation('post', {
        id: 'createMessage',
        summary: 'Post a message (runs the conversation\'s agent)',
        description:
          'Runs the conversation\'s assistant on a new message; the stream contract is the one of every execution endpoint. A different `agent` in the body is a 400; a conversation without an assistant is 409 `agent_not_available`. Turns of one conversation run one at a time, in arrival order: while earlier turns are open, `concurrency` says whether the message waits (a queued run), is refused (409 `conversation_busy`) or interrupts them.',
        tag: 'Execution',
        access: { credential: 'workspace', scopes: ['messages:create'] },
        request: PostMessage,
        responses: executionResponses(),
        errors: [...EXECUTION_ERRORS, 'conversation_not_found', 'conversation_busy'],
      }),
      get: operation('get', {
        id: 'listMessages',
        summary: 'List a conversation\'s messages',
        description: 'Oldest first, paged by `after` (a message id); `next_cursor` is the last message id of the page, null on the last page.',
        tag: 'Conversations',
        access: { credential: 'workspace', scopes: ['messages:read'] },
        request: ListMessages,
        responses: { '200': json('A page of messages.', cursorList(ref('Message'))) },
        errors: ['conversation_not_found'],
      }),
    },
  },
};
