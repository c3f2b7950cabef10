import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { ResponseFormat } from './runs';

/** Strict: a keyword ajv cannot enforce makes the schema unenforceable, which is a 400 at parse. */
const ajv = new Ajv({ allErrors: true, strict: true, strictTypes: false, strictTuples: false, strictRequired: false });
addFormats(ajv);

const compiled = new Map<string, ValidateFunction>();

function validatorFor(schema: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(schema);
  let validate = compiled.get(key);
  if (!validate) {
    validate = ajv.compile(schema);
    if (compiled.size > 500) compiled.clear();
    compiled.set(key, validate);
  }
  return validate;
}

/** Why a json_schema cannot be enforced, or undefined when it can. Called at parse time. */
export function schemaProblem(schema: Record<string, unknown>): string | undefined {
  if (schema.type !== 'object') return 'response_format.schema must describe an object (type "object" at the root)';
  try {
    validatorFor(schema);
    return undefined;
  } catch (err) {
    return `response_format.schema cannot be enforced: ${(err as Error).message}`;
  }
}

export type StructuredCheck =
  | { ok: true; value: unknown }
  | { ok: false; paths: string[]; problems: string[] };

function stripFence(text: string): string {
  const fenced = /^\s*```(?:json)?\s*\n([\s\S]*?)\n?```\s*$/i.exec(text);
  return fenced ? fenced[1] : text;
}

/** Drops keys the schema does not declare, at every level that declares properties. */
export function pruneToSchema(value: unknown, schema: Record<string, unknown>): unknown {
  if (Array.isArray(value)) {
    const items = schema.items;
    return items && typeof items === 'object' && !Array.isArray(items) ? value.map((v) => pruneToSchema(v, items as Record<string, unknown>)) : value;
  }
  if (value && typeof value === 'object') {
    const properties = schema.properties as Record<string, Record<string, unknown>> | undefined;
    if (!properties) return value;
    const pruned: Record<string, unknown> = {};
    for (const [key, sub] of Object.entries(value)) {
      if (Object.prototype.hasOwnProperty.call(properties, key)) pruned[key] = pruneToSchema(sub, properties[key] ?? {});
    }
    return pruned;
  }
  return value;
}

function pathOf(error: ErrorObject): string {
  const base = error.instancePath || '';
  const missing = error.keyword === 'required' ? `/${(error.params as { missingProperty: string }).missingProperty}` : '';
  return `$${(base + missing).replace(/\//g, '.')}`;
}

/**
 * Parses, prunes and validates a model reply. Problems name paths and rules, never the reply's
 * values, so they are safe to return to the caller and to send back to the model for the repair.
 */
export function checkStructured(text: string, format: ResponseFormat): StructuredCheck {
  if (format.type === 'text') return { ok: true, value: text };
  let parsed: unknown;
  try {
    parsed = JSON.parse(stripFence(text));
  } catch {
    return { ok: false, paths: ['$'], problems: ['$: reply is not valid JSON'] };
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return { ok: false, paths: ['$'], problems: ['$: must be a JSON object'] };
  }
  if (format.type === 'json_object') return { ok: true, value: parsed };
  const value = pruneToSchema(parsed, format.schema);
  const validate = validatorFor(format.schema);
  if (validate(value)) return { ok: true, value };
  const errors = validate.errors ?? [];
  const paths = [...new Set(errors.map(pathOf))];
  const problems = errors.map((e) => `${pathOf(e)}: ${e.message ?? e.keyword}`);
  return { ok: false, paths, problems };
}
