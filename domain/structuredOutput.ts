import { createHash } from 'node:crypto';
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import type { RegExpEngine } from 'ajv/dist/types';
import addFormats from 'ajv-formats';
import { LRUCache } from 'lru-cache';
import { RE2JS } from 're2js';
import type { ResponseFormat, StructuredCheck } from './runs';

/**
 * Bounds on a caller's response_format.schema, checked before anything compiles it: the check is one
 * bounded, iterative walk, so it is cheap even for hostile input sent without a credential (the spec
 * checks the schema at parse, before authorization). Past a bound the request is a 400 naming it.
 */
export const SCHEMA_BOUNDS = {
  /** Bytes of the schema as JSON. */
  bytes: 32 * 1024,
  /** Nesting of objects and arrays. */
  depth: 32,
  /** Keys of every object in the schema, keywords and property names alike. */
  keywords: 1_000,
  /** Names declared under `properties` (and `patternProperties`) in all. */
  properties: 200,
} as const;

/** The first bound the schema exceeds, or undefined. Iterative: a deeply nested schema cannot overflow the stack. */
function exceededBound(schema: Record<string, unknown>): string | undefined {
  let keywords = 0;
  let properties = 0;
  const stack: [unknown, number][] = [[schema, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth > SCHEMA_BOUNDS.depth) return `response_format.schema is nested deeper than ${SCHEMA_BOUNDS.depth} levels`;
    const entries = Array.isArray(node) ? node.map((v) => ['', v] as const) : Object.entries(node);
    if (!Array.isArray(node)) {
      keywords += entries.length;
      if (keywords > SCHEMA_BOUNDS.keywords) return `response_format.schema has more than ${SCHEMA_BOUNDS.keywords} keywords`;
    }
    for (const [key, value] of entries) {
      if ((key === 'properties' || key === 'patternProperties') && value && typeof value === 'object') {
        properties += Object.keys(value).length;
        if (properties > SCHEMA_BOUNDS.properties) return `response_format.schema declares more than ${SCHEMA_BOUNDS.properties} properties`;
      }
      stack.push([value, depth + 1]);
    }
  }
  // Measured last: JSON.stringify recurses, and only a schema known to be shallow is given to it.
  if (Buffer.byteLength(JSON.stringify(schema)) > SCHEMA_BOUNDS.bytes) return `response_format.schema is larger than ${SCHEMA_BOUNDS.bytes} bytes`;
  return undefined;
}

/**
 * Caller patterns run in RE2's linear time (re2js), never as backtracking RegExps: `^(a+)+$` against
 * model output cannot stall the worker. A pattern RE2 cannot express (backreferences, lookaround) makes
 * the schema unenforceable, a 400 at parse.
 */
const linearRegExp: RegExpEngine = Object.assign(
  (pattern: string) => {
    const re = RE2JS.compile(pattern);
    // ajv keys a schema's patterns by toString(): each must name its own pattern.
    return { test: (s: string) => re.matcher(s).find(), toString: () => `re2:${pattern}` };
  },
  // Only read by ajv's standalone code generation, which the service does not use.
  { code: 'RE2JS' },
);

/**
 * Compiles a caller's schema in an Ajv instance of its own, thrown away with the validator: nothing a
 * schema registers ($id, $ref targets) outlives it or is seen by another caller's schema, and nothing
 * accumulates in the process. Strict: a keyword ajv cannot enforce makes the schema unenforceable.
 */
function compile(schema: Record<string, unknown>): ValidateFunction {
  const ajv = new Ajv({ allErrors: true, strict: true, strictTypes: false, strictTuples: false, strictRequired: false, code: { regExp: linearRegExp } });
  addFormats(ajv);
  return ajv.compile(schema);
}

const keyOf = (schema: Record<string, unknown>) => createHash('sha256').update(JSON.stringify(schema)).digest('hex');

/** Validators a worker reuses across the calls of its runs; bounded, least recently used out. */
const validators = new LRUCache<string, ValidateFunction>({ max: 200 });

function validatorFor(schema: Record<string, unknown>): ValidateFunction {
  const key = keyOf(schema);
  let validate = validators.get(key);
  if (!validate) {
    validate = compile(schema);
    validators.set(key, validate);
  }
  return validate;
}

/**
 * Verdicts on schemas already judged: a client sends the same schema with every request, and compiling
 * costs milliseconds (about 0.2 ms a property). Only the verdict is kept, never the compiled schema.
 */
const verdicts = new LRUCache<string, { problem?: string }>({ max: 1_000 });

/** Why a json_schema cannot be enforced, or undefined when it can. Called at parse time; compiles nothing it keeps. */
export function schemaProblem(schema: Record<string, unknown>): string | undefined {
  if (schema.type !== 'object') return 'response_format.schema must describe an object (type "object" at the root)';
  const bound = exceededBound(schema);
  if (bound) return bound;
  const key = keyOf(schema);
  let verdict = verdicts.get(key);
  if (!verdict) {
    try {
      compile(schema);
      verdict = {};
    } catch (err) {
      verdict = { problem: `response_format.schema cannot be enforced: ${(err as Error).message}` };
    }
    verdicts.set(key, verdict);
  }
  return verdict.problem;
}

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
 * The problem of a structured reply that stopped at the call's output cap: unfinished, not malformed.
 * Its repair asks again for a complete, shorter object, without the cut-off reply, which could fill the window.
 */
export const CUT_OFF_PROBLEM = '$: the reply was cut off at the output limit before it was complete';

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
