import * as yup from 'yup';
import { IDEMPOTENCY_HEADERS } from '../../middleware/idempotent';
import { about } from '../../../contract/about';
import { MessageBody, runtimeInputSchema } from '../../../contract/runtimeInput';

const conversationParams = yup.object({ id: yup.string().required().meta(about('The conversation id (`conv_…`).')) });

/** POST /api/v2/conversations: agent, channel and external_ref share the runtime input's rules. */
export const CreateConversation = {
  body: yup
    .object({
      agent: (runtimeInputSchema.fields.agent as yup.StringSchema).meta(about('The assistant; a conversation without one cannot run messages.')),
      channel: runtimeInputSchema.fields.channel,
      external_ref: runtimeInputSchema.fields.external_ref,
    })
    .noUnknown(true, 'unknown key: ${unknown}')
    .strict() as unknown as yup.Schema<{ agent?: string; channel?: string; external_ref?: string }>,
};

export const ReadConversation = { params: conversationParams };

/** POST /api/v2/conversations/{id}/messages: the runtime input and the turn's concurrency; the agent comes from the conversation. */
export const PostMessage = { params: conversationParams, body: MessageBody, headers: IDEMPOTENCY_HEADERS };

/** Message list paging: `after` a message id, `limit` 1-100 (above 100 is refused, not clamped). */
export const ListMessages = {
  params: conversationParams,
  query: yup
    .object({
      after: yup.string().matches(/^msg_[0-9a-z]{26}$/, 'after must be a message id').meta(about('A message id: the page starts after it.')),
      limit: yup
        .number()
        .typeError('limit must be an integer')
        .integer('limit must be an integer')
        .min(1, 'limit must be at least 1')
        .max(100, 'limit must be at most 100')
        .meta({ jsonSchema: { default: 20, description: 'Above 100 is a 400 (not clamped).' } }),
    })
    .noUnknown(true, 'unknown query parameter: ${unknown}'),
};
