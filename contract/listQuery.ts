import * as yup from 'yup';
import { decodeCursor } from '../domain/cursor';
import { isPublicId, publicIdPattern, type IdKind } from '../domain/ids';
import { refined } from './parse';

const DEFAULT_LIMIT = 20;

/**
 * A query parameter given once: a repeated one is refused rather than one of its values picked.
 * `jsonSchema` is what the parameter's further test()s accept, for the document.
 */
export const once = (name: string, jsonSchema: Record<string, unknown> = {}) =>
  yup
    .mixed<string>()
    .test('once', `${name} may be given only once.`, (v) => !Array.isArray(v))
    .meta({ jsonSchema: { type: 'string', ...jsonSchema } });

/** A positive integer parameter, `default` when absent and clamped to `max` when given (if `max`). */
export const positiveParam = (name: string, defaultValue: number, max?: number) =>
  once(name, { type: 'integer', minimum: 1, default: defaultValue, ...(max !== undefined && { description: `Larger values are clamped to ${max}.` }) }).test(
    name,
    `${name} must be a positive integer.`,
    (v) => v === undefined || (/^[0-9]+$/.test(v) && Number(v) >= 1),
  );

/** The largest offset a list takes: past it a page is better reached by narrowing the list (and PostgreSQL's OFFSET is a bigint). */
const MAX_OFFSET = 100_000;

/** A non-negative integer parameter, at most MAX_OFFSET. */
export const offsetParam = (name: string) =>
  once(name, { type: 'integer', minimum: 0, maximum: MAX_OFFSET, default: 0 }).test(
    name,
    `${name} must be an integer from 0 to ${MAX_OFFSET}.`,
    (v) => v === undefined || (/^[0-9]+$/.test(v) && Number(v) <= MAX_OFFSET),
  );

type Filters = Record<string, yup.Schema<string | undefined>>;

export interface Page<F> {
  limit: number;
  /** The public id the cursor names: the page starts after it. */
  after?: string;
  filters: F;
}

/**
 * The query of a cursor-paged list: `limit` (clamped to `maxLimit`, spec "List limit elsewhere"),
 * the opaque `cursor` of a previous page (of items of `kind`), and the list's filters. An unknown
 * parameter is refused rather than ignored, so a filter the list does not offer never silently
 * returns the unfiltered list.
 */
export function listQuery<F extends Filters>(kind: IdKind, maxLimit: number, filters: F = {} as F) {
  const schema = yup
    .object({
      limit: positiveParam('limit', Math.min(DEFAULT_LIMIT, maxLimit), maxLimit),
      cursor: once('cursor', { maxLength: 256, pattern: '^[A-Za-z0-9_-]+$', description: 'The opaque cursor of the previous page (never built or parsed by clients).' }),
      ...filters,
    })
    .noUnknown(true, 'unknown query parameter: ${unknown}')
    // Strict: without it yup strips unknown keys instead of refusing them.
    .strict();
  return refined(schema, (value): Page<{ [K in keyof F]?: string }> => {
    const { limit, cursor, ...rest } = value as { limit?: string; cursor?: string } & Record<string, string | undefined>;
    return {
      limit: limit === undefined ? Math.min(DEFAULT_LIMIT, maxLimit) : Math.min(Number(limit), maxLimit),
      ...(cursor !== undefined && { after: decodeCursor(cursor, kind) }),
      filters: rest as { [K in keyof F]?: string },
    };
  });
}

/** A filter parameter: given once, and one of `values` (an unknown value is a 400, spec "unknown status filter value"). */
export function oneOfFilter(name: string, values: readonly string[]) {
  return once(name, { enum: [...values], description: 'An unknown value is a 400.' }).test(name, `${name} must be one of ${values.join(', ')}.`, (v) => v === undefined || values.includes(v));
}

/** A filter parameter naming a resource by its public id. */
export function idFilter(name: string, kind: IdKind, what: string) {
  return once(name, { pattern: publicIdPattern(kind) }).test(name, `${name} must be ${what}.`, (v) => v === undefined || isPublicId(kind, v));
}

/** A path parameter naming a resource by its public id. */
export function idParam(kind: IdKind, what: string) {
  return yup.object({ id: yup.string().required().test('id', `The path must name ${what}.`, (v) => isPublicId(kind, v)).meta({ jsonSchema: { pattern: publicIdPattern(kind), description: `${what[0].toUpperCase()}${what.slice(1)}.` } }) });
}
