import * as yup from 'yup';
import { runtimeInputSchema } from './runtimeInput';

/** POST /api/v2/conversations: agent, channel and external_ref share the runtime input's rules. */
export const createConversationSchema = yup
  .object({
    agent: runtimeInputSchema.fields.agent,
    channel: runtimeInputSchema.fields.channel,
    external_ref: runtimeInputSchema.fields.external_ref,
  })
  .noUnknown(true, 'unknown key: ${unknown}')
  .strict() as unknown as yup.Schema<CreateConversation>;

export interface CreateConversation {
  agent?: string;
  channel?: string;
  external_ref?: string;
}

/** Message list paging: `after` a message id, `limit` 1-100 (above 100 is refused, not clamped). */
export const messagePageSchema = yup
  .object({
    after: yup.string().matches(/^msg_[0-9a-z]{26}$/, 'after must be a message id'),
    limit: yup.number().typeError('limit must be an integer').integer('limit must be an integer').min(1, 'limit must be at least 1').max(100, 'limit must be at most 100'),
  })
  .noUnknown(true, 'unknown query parameter: ${unknown}');
