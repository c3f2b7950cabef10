import type { ResponseFormat } from '../../domain/runs';
import type { ProviderFormat } from './types';

/**
 * Keywords of the subset OpenAI enforces strictly (its Structured Outputs guide); a schema using any
 * other, or an object not closed with every property required, is sent with `strict: false`, which
 * providers still follow but do not guarantee. Validation after the reply is the backstop either way.
 */
const STRICT_KEYWORDS = new Set([
  'type', 'properties', 'required', 'additionalProperties', 'items', 'enum', 'const', 'anyOf', 'description', 'title',
  '$ref', '$defs', 'definitions', 'pattern', 'format', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum',
  'multipleOf', 'minItems', 'maxItems',
]);
const SUBSCHEMA_MAPS = new Set(['properties', '$defs', 'definitions']);

/** Whether the schema fits the strict subset: iterative, as the schema is bounded but the caller's. */
export function fitsStrictSubset(root: Record<string, unknown>): boolean {
  if (root.type !== 'object') return false;
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    if (Array.isArray(node)) {
      stack.push(...node);
      continue;
    }
    if (node === null || typeof node !== 'object') continue;
    const schema = node as Record<string, unknown>;
    if (Object.keys(schema).some((k) => !STRICT_KEYWORDS.has(k))) return false;
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (types.includes('object') || schema.properties) {
      const names = Object.keys((schema.properties as object | undefined) ?? {});
      const required = new Set(Array.isArray(schema.required) ? schema.required : []);
      if (schema.additionalProperties !== false || names.some((n) => !required.has(n))) return false;
    }
    for (const [key, value] of Object.entries(schema)) {
      if (SUBSCHEMA_MAPS.has(key) && value && typeof value === 'object') stack.push(...Object.values(value));
      else if (key === 'items' || key === 'anyOf') stack.push(value);
    }
  }
  return true;
}

/** What a structured request asks the provider for: the caller's schema (named as the provider requires), or any JSON object. */
export function providerFormat(format: ResponseFormat): ProviderFormat | undefined {
  if (format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'json_object' };
  const name = (format.name ?? 'response').replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64) || 'response';
  return { type: 'json_schema', name, schema: format.schema, strict: fitsStrictSubset(format.schema) };
}
