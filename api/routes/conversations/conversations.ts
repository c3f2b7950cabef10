import Router from '@koa/router';
import type { Context } from 'koa';
import { conversationObject, messageObject } from '../../../domain/conversations';
import { invalidRequest, ServiceError } from '../../../domain/errors';
import { mintTraceId } from '../../../domain/ids';
import { findAgentInWorkspace } from '../../../db/agents';
import { findPublicConversation, openConversation, type ConversationRecord } from '../../../db/conversations';
import { messagePage } from '../../../db/messages';
import { Outbox } from '../../../db/outbox';
import { transaction } from '../../../db/sql';
import { execute } from '../../execution/execution';
import { authorize } from '../../middleware/auth';
import { workspaceOf } from '../../../callers/principal';
import { idempotent } from '../../middleware/idempotent';
import { validate } from '../../middleware/validate';
import { type Input } from '../../../contract/parse';
import type { AppState } from '../../middleware/state';
import { notFound } from '../../../callers/tenancy';
import { CreateConversation, ListMessages, PostMessage, ReadConversation } from './schema';

const DEFAULT_PAGE = 20;

/** The caller's public conversation, looked up once per request: the rate limits and the handler share it. */
async function conversationOf(ctx: Context & { state: AppState & { input: { params: { id: string } } } }): Promise<ConversationRecord | undefined> {
  ctx.state.conversation ??= (await findPublicConversation(workspaceOf(ctx.state.principal).id, ctx.state.input.params.id)) ?? null;
  return ctx.state.conversation ?? undefined;
}

/** Conversations: open or resolve one, read it, post a message (runs its agent), page its messages. */
export function conversationsRoutes(router: Router<AppState>): void {
  router.post<{ input: Input<typeof CreateConversation> }>(
    '/api/v2/conversations',
    validate(CreateConversation),
    authorize({ scopes: ['conversations:create'], endpoint: 'conversations_create' }),
    async (ctx) => {
      const { body } = ctx.state.input;
      const workspace = workspaceOf(ctx.state.principal);
      const agent = body.agent ? await findAgentInWorkspace(workspace.id, body.agent) : null;
      if (agent === undefined) throw notFound('agent_not_found');
      const { conversation, created } = await transaction(async (tx) => {
        const outbox = new Outbox(workspace, { requestId: ctx.state.requestId, traceId: (ctx.state.traceId ??= mintTraceId()) });
        const opened = await openConversation({ workspace, agent, channel: body.channel ?? '', externalRef: body.external_ref }, outbox, tx);
        await outbox.write(tx);
        return opened;
      });
      ctx.status = created ? 201 : 200;
      ctx.body = conversationObject(conversation);
    },
  );

  router.get<{ input: Input<typeof ReadConversation> }>(
    '/api/v2/conversations/:id',
    validate(ReadConversation),
    authorize({ scopes: ['conversations:read'], endpoint: 'conversations_read' }),
    async (ctx) => {
      const conversation = await conversationOf(ctx);
      if (!conversation) throw notFound('conversation_not_found');
      ctx.body = conversationObject(conversation);
    },
  );

  router.post<{ input: Input<typeof PostMessage> }>(
    '/api/v2/conversations/:id/messages',
    validate(PostMessage),
    authorize({
      scopes: ['messages:create'],
      endpoint: 'conversation_messages',
      agent: async (ctx) => (await conversationOf(ctx))?.agentPublicId ?? undefined,
      endUser: async (ctx) => (await conversationOf(ctx))?.externalRef ?? undefined,
    }),
    idempotent('Idempotency-Replayed'),
    async (ctx) => {
      const { body } = ctx.state.input;
      const conversation = await conversationOf(ctx);
      if (!conversation) throw notFound('conversation_not_found');
      const agent = conversation.agentPublicId;
      if (!agent) throw new ServiceError('agent_not_available', 'This conversation has no assistant.');
      if (body.agent !== undefined && body.agent !== agent) throw invalidRequest('agent is taken from the conversation; a different agent in the body is refused.');
      await execute(ctx, body, { kind: 'message', agentPublicId: agent, conversation, concurrency: body.concurrency });
    },
  );

  router.get<{ input: Input<typeof ListMessages> }>(
    '/api/v2/conversations/:id/messages',
    validate(ListMessages),
    authorize({ scopes: ['messages:read'], endpoint: 'messages_list' }),
    async (ctx) => {
      const { query } = ctx.state.input;
      const conversation = await conversationOf(ctx);
      if (!conversation) throw notFound('conversation_not_found');
      const limit = query.limit ?? DEFAULT_PAGE;
      const rows = await messagePage(conversation.id, query.after, limit + 1);
      const data = rows.slice(0, limit).map((m) => messageObject(m, conversation.publicId));
      ctx.body = { object: 'list', data, next_cursor: rows.length > limit ? data[data.length - 1].id : null };
    },
  );
}
