import Router from '@koa/router';
import { QueryTypes } from 'sequelize';
import { ServiceError, invalidRequest } from '../../domain/errors';
import { Agent, Conversation, models } from '../../db/models';
import { conversationObject, openConversation } from '../../db/conversations';
import { Outbox } from '../../db/outbox';
import { db } from '../../db/sequelize';
import { transaction } from '../../db/sql';
import { authorize, workspaceOf } from '../middleware/auth';
import type { AppState } from '../state';
import { findInWorkspace, notFound } from '../tenancy';
import { createConversationSchema, messagePageSchema } from '../validation/conversation';
import { validated } from '../validation/validate';
import { executionEndpoint } from './executionEndpoint';

const DEFAULT_PAGE = 20;

/** Internal conversations (behind stateless /responses) are never reachable by id. */
async function publicConversation(workspaceId: number, publicId: string): Promise<Conversation> {
  const conversation = await findInWorkspace(Conversation, workspaceId, publicId, 'conversation_not_found');
  if (conversation.internal) throw notFound('conversation_not_found');
  return conversation;
}

async function agentIdOf(conversation: { agentId: number | null }): Promise<string | null> {
  if (conversation.agentId === null) return null;
  return (await Agent.findByPk(conversation.agentId, { attributes: ['publicId'] }))?.publicId ?? null;
}

interface MessageRow {
  id: number;
  public_id: string;
  role: string;
  content: unknown;
  run: string | null;
  created_at: Date;
}

/** Conversations: open or resolve one, read it, post a message (runs its agent), page its messages. */
export function conversationsRoutes(router: Router<AppState>): void {
  router.post('/api/v2/conversations', async (ctx, next) => {
    ctx.state.conversationRequest = validated(createConversationSchema, ctx.request.body);
    await next();
  }, authorize({ scopes: ['conversations:create'], endpoint: 'conversations_create' }), async (ctx) => {
    models();
    const body = ctx.state.conversationRequest!;
    const workspace = workspaceOf(ctx.state.principal);
    const agent = body.agent ? await findInWorkspace(Agent, workspace.id, body.agent, 'agent_not_found') : null;
    const { conversation, created } = await transaction(async (sql) => {
      const outbox = new Outbox(workspace, { requestId: ctx.state.requestId, traceId: '' });
      const opened = await openConversation(sql, { workspace, agent, channel: body.channel ?? '', externalRef: body.external_ref }, outbox);
      await outbox.write(sql);
      return opened;
    });
    ctx.status = created ? 201 : 200;
    ctx.body = conversationObject(conversation, await agentIdOf(conversation));
  });

  router.get('/api/v2/conversations/:id', authorize({ scopes: ['conversations:read'], endpoint: 'conversations_read' }), async (ctx) => {
    models();
    const conversation = await publicConversation(workspaceOf(ctx.state.principal).id, ctx.params.id);
    ctx.body = conversationObject(conversation, await agentIdOf(conversation));
  });

  /** The conversation is looked up once: its agent and end user feed the rate limits, then it runs. */
  const conversationOf = async (ctx: { state: AppState; params: Record<string, string> }): Promise<Conversation | undefined> => {
    models();
    ctx.state.conversation ??= await publicConversation(workspaceOf(ctx.state.principal).id, ctx.params.id).catch(() => undefined);
    return ctx.state.conversation;
  };

  router.post(
    '/api/v2/conversations/:id/messages',
    ...executionEndpoint({
      endpoint: 'conversation_messages',
      scope: 'messages:create',
      agent: async (ctx) => {
        const conversation = await conversationOf(ctx);
        return conversation ? (await agentIdOf(conversation)) ?? undefined : undefined;
      },
      endUser: async (ctx) => (await conversationOf(ctx))?.externalRef ?? undefined,
      target: async (ctx, request) => {
        const conversation = await conversationOf(ctx);
        if (!conversation) throw notFound('conversation_not_found');
        const agent = await agentIdOf(conversation);
        if (!agent) throw new ServiceError('agent_not_available', 'This conversation has no assistant.');
        if (request.agent !== undefined && request.agent !== agent) throw invalidRequest('agent is taken from the conversation; a different agent in the body is refused.');
        return { kind: 'message', agentPublicId: agent, conversation };
      },
    }),
  );

  router.get('/api/v2/conversations/:id/messages', async (ctx, next) => {
    ctx.state.messagePage = validated(messagePageSchema, ctx.query);
    await next();
  }, authorize({ scopes: ['messages:read'], endpoint: 'messages_list' }), async (ctx) => {
    models();
    const page = ctx.state.messagePage!;
    const conversation = await publicConversation(workspaceOf(ctx.state.principal).id, ctx.params.id);
    const limit = page.limit ?? DEFAULT_PAGE;
    const rows = await db().query<MessageRow>(
      `SELECT m.id, m.public_id, m.role, m.content, r.public_id AS run, m.created_at
         FROM messages m LEFT JOIN runs r ON r.id = m.run_id
        WHERE m.conversation_id = :conversation
          AND (:after::text IS NULL OR m.id > (SELECT id FROM messages WHERE public_id = :after AND conversation_id = :conversation))
        ORDER BY m.id
        LIMIT :limit`,
      { replacements: { conversation: conversation.id, after: page.after ?? null, limit: limit + 1 }, type: QueryTypes.SELECT },
    );
    const data = rows.slice(0, limit).map((m) => ({
      id: m.public_id,
      object: 'message',
      conversation: conversation.publicId,
      role: m.role,
      content: m.content,
      run: m.run,
      created_at: m.created_at.toISOString(),
    }));
    ctx.body = { object: 'list', data, next_cursor: rows.length > limit ? data[data.length - 1].id : null };
  });
}
