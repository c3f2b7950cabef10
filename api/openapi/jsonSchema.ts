import { publicIdPattern, type IdKind } from '../../domain/ids';

/** A JSON Schema (2020-12, the dialect of OpenAPI 3.1) or any other piece of the document: plain data. */
export type JsonSchema = { [key: string]: unknown };

export const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });

/**
 * An object that accepts only the listed keys: what a yup schema with noUnknown() refuses, and what a
 * view function builds (every key always present, so all are required unless `optional` names them).
 */
export function closed(properties: Record<string, JsonSchema>, options: { optional?: string[]; required?: string[]; description?: string } = {}): JsonSchema {
  const required = options.required ?? Object.keys(properties).filter((k) => !options.optional?.includes(k));
  return { type: 'object', ...(options.description && { description: options.description }), properties, ...(required.length > 0 && { required }), additionalProperties: false };
}

/** The value, or null (a view function's `?? null`). */
export function orNull(schema: JsonSchema): JsonSchema {
  if (typeof schema.type === 'string' && schema.$ref === undefined) return { ...schema, type: [schema.type, 'null'] };
  return { anyOf: [schema, { type: 'null' }] };
}

export const string = (extra: JsonSchema = {}): JsonSchema => ({ type: 'string', ...extra });
export const integer = (extra: JsonSchema = {}): JsonSchema => ({ type: 'integer', ...extra });
export const timestamp = (description?: string): JsonSchema => ({ type: 'string', format: 'date-time', ...(description && { description }) });
export const anyObject = (description?: string): JsonSchema => ({ type: 'object', ...(description && { description }) });
export const constant = (value: string): JsonSchema => ({ type: 'string', const: value });
export const oneOfValues = (values: readonly string[], description?: string): JsonSchema => ({ type: 'string', enum: [...values], ...(description && { description }) });

/** A public id as mintId writes it: the kind's prefix and a lowercase ULID. */
export const publicId = (kind: IdKind, description?: string): JsonSchema => ({
  type: 'string',
  pattern: publicIdPattern(kind),
  ...(description && { description }),
});
