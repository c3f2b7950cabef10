import { errorSchemas } from './errors';
import { executionSchemas } from './execution';
import { closed, constant, orNull, string, type JsonSchema } from './jsonSchema';
import { queryParam } from './operation';
import { streamSchemas } from './streamEvents';

/** The shared components: the error envelope, the run and its input, the stream events. Each resource's own schemas come with its paths. */
export const sharedSchemas: Record<string, JsonSchema> = { ...errorSchemas, ...executionSchemas, ...streamSchemas };

export const headers: Record<string, JsonSchema> = {
  RequestId: { description: 'The request id (also `error.request_id` of a failure).', schema: { type: 'string' } },
};

/** A cursor-paged list (api/listPage.ts): `next_cursor`, or `next` on /logs. */
export function cursorList(item: JsonSchema, cursorName: 'next_cursor' | 'next' = 'next_cursor'): JsonSchema {
  return closed({ object: constant('list'), data: { type: 'array', items: item }, [cursorName]: orNull(string({ description: 'Opaque: pass it back unchanged as `cursor` for the next page; null on the last page.' })) });
}

/** `limit` of a list whose larger values are clamped (api/validation/listQuery.ts). */
export const limitParam = (max: number, defaultLimit = 20) =>
  queryParam('limit', { type: 'integer', minimum: 1, default: defaultLimit }, `Page size; larger values are clamped to ${max}.`);

export const cursorParam = queryParam('cursor', { type: 'string', maxLength: 256, pattern: '^[A-Za-z0-9_-]+$' }, 'The opaque cursor of the previous page (never built or parsed by clients).');
