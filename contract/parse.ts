import * as yup from 'yup';
import { invalidRequest } from '../domain/errors';
import { reservedKeyAt } from './storableText';

/**
 * How a request's declared shapes are read, by the HTTP door (api/middleware/validate.ts) and by
 * whatever else takes the same shapes (a job's items, a schedule's run body, the admin CLI).
 */

/**
 * A yup schema, and what reads the value it passed on: for rules yup cannot say (across keys, against
 * other data) and for the shape the handler wants. The OpenAPI document shows the schema.
 */
export interface Refined<T, V = never> {
  readonly schema: yup.Schema<V>;
  read(value: V): T;
}

export const refined = <V, T>(schema: yup.Schema<V>, read: (value: V) => T): Refined<T, V> => ({ schema, read });

/** What reads one part of a request: a yup schema, or one refined. Either way the document is generated from the schema (api/openapi/requestSchema.ts). */
export type Parser<T> = yup.Schema<T> | Refined<T, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** The parts of a request an endpoint declares. */
export interface Schemas {
  body?: Parser<unknown>;
  query?: Parser<unknown>;
  params?: Parser<unknown>;
  headers?: Parser<unknown>;
}

/** The typed input a handler reads: each declared part, parsed. */
export type Input<S extends Schemas> = { [K in keyof S]: S[K] extends Parser<infer T> ? T : never };

/** Runs a yup schema and turns its first complaint into a 400 in the envelope. */
export function validated<T>(schema: yup.Schema<T>, value: unknown): T {
  try {
    // An absent body reads as an empty object; a `null` one is refused below, as not an object.
    return schema.validateSync(value === undefined ? {} : value, { abortEarly: true });
  } catch (err) {
    // A body that is JSON but not an object (null, an array, a string) fails the root's type.
    if (err instanceof yup.ValidationError && !err.path && (err.type === 'typeError' || err.type === 'nullable')) throw invalidRequest('Request body must be a JSON object.');
    if (err instanceof yup.ValidationError) throw invalidRequest(err.errors[0] ?? 'Invalid request.', err.path || undefined);
    // yup looks each key up among an object schema's fields, and one named after an Object.prototype
    // member (`constructor`, `__proto__`, …) finds that member and throws: a key no schema declares.
    const reserved = reservedKeyAt(value);
    if (reserved !== undefined) throw invalidRequest(`unknown key: ${reserved} (no request takes keys named after Object.prototype's members)`);
    throw err;
  }
}

const isRefined = <T>(parser: Parser<T>): parser is Refined<T, any> => !yup.isSchema(parser); // eslint-disable-line @typescript-eslint/no-explicit-any

/** The schema a part is validated with, and so documented with. */
export const schemaOf = (parser: Parser<unknown>): yup.Schema<unknown> => (isRefined(parser) ? parser.schema : parser);

/** Validates a value with a parser's schema, then lets the parser read it. */
export const parse = <T>(parser: Parser<T>, value: unknown): T => (isRefined(parser) ? parser.read(validated(parser.schema, value)) : validated(parser, value));

