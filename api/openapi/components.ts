import { errorSchemas } from './errors';
import { executionSchemas } from './execution';
import { closed, constant, orNull, string, type JsonSchema } from './jsonSchema';
import { streamSchemas } from './streamEvents';

/** The shared components: the error envelope, the run and its input, the stream events. Each resource's own schemas come with its paths. */
export const sharedSchemas: Record<string, JsonSchema> = { ...errorSchemas, ...executionSchemas, ...streamSchemas };

export const headers: Record<string, JsonSchema> = {
  RequestId: { description: 'The request id (also `error.request_id` of a failure).', schema: { type: 'string' } },
};

/** A cursor-paged list (api/routes/listPage.ts): `next_cursor`, or `next` on /logs. */
export function cursorList(item: JsonSchema, cursorName: 'next_cursor' | 'next' = 'next_cursor'): JsonSchema {
  return closed({ object: constant('list'), data: { type: 'array', items: item }, [cursorName]: orNull(string({ description: 'Opaque: pass it back unchanged as `cursor` for the next page; null on the last page.' })) });
}
