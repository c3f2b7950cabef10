import * as yup from 'yup';
import { decodeCursor } from '../../domain/cursor';
import { isPublicId, type IdKind } from '../../domain/ids';
import { validated } from '../middleware/validate';

const DEFAULT_LIMIT = 20;

/** A query parameter given once: a repeated one is refused rather than one of its values picked. */
export const once = (name: string) => yup.mixed<string>().test('once', `${name} may be given only once.`, (v) => !Array.isArray(v));

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
      limit: once('limit').test('limit', 'limit must be a positive integer.', (v) => v === undefined || (/^[0-9]+$/.test(v) && Number(v) >= 1)),
      cursor: once('cursor'),
      ...filters,
    })
    .noUnknown(true, 'unknown query parameter: ${unknown}')
    // Strict: without it yup strips unknown keys instead of refusing them.
    .strict();
  return (value: unknown): Page<{ [K in keyof F]?: string }> => {
    const { limit, cursor, ...rest } = validated(schema, value) as { limit?: string; cursor?: string } & Record<string, string | undefined>;
    return {
      limit: limit === undefined ? Math.min(DEFAULT_LIMIT, maxLimit) : Math.min(Number(limit), maxLimit),
      ...(cursor !== undefined && { after: decodeCursor(cursor, kind) }),
      filters: rest as { [K in keyof F]?: string },
    };
  };
}

/** A filter parameter: given once, and one of `values` (an unknown value is a 400, spec "unknown status filter value"). */
export function oneOfFilter(name: string, values: readonly string[]) {
  return once(name).test(name, `${name} must be one of ${values.join(', ')}.`, (v) => v === undefined || values.includes(v));
}

/** A filter parameter naming a resource by its public id. */
export function idFilter(name: string, kind: IdKind, what: string) {
  return once(name).test(name, `${name} must be ${what}.`, (v) => v === undefined || isPublicId(kind, v));
}

/** A path parameter naming a resource by its public id. */
export function idParam(kind: IdKind, what: string) {
  return yup.object({ id: yup.string().required().test('id', `The path must name ${what}.`, (v) => isPublicId(kind, v)) });
}
