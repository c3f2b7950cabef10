import type { Context, Next } from 'koa';
import * as yup from 'yup';
import { invalidRequest } from '../../domain/errors';
import { reservedKeyAt, unstorableTextAt } from '../validation/storableText';
import type { AppState } from '../state';

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

type Ctx = Context & { state: AppState; params?: Record<string, string> };

/**
 * The validation step of every endpoint: parses the declared parts (body, query, path parameters,
 * headers) with their schemas into `ctx.state.input`, which is all the handler reads. It runs before
 * authentication: a malformed request is a 400 before any credential is looked at (spec: checked "at
 * parse, before authorization"). `refine` states rules that span parts (an id in the body and the path).
 */
export function validate<S extends Schemas>(schemas: S, refine?: (input: Input<S>) => void) {
  const middleware = async (ctx: Ctx, next: Next): Promise<void> => {
    const parts = { body: ctx.request.body, query: ctx.query, params: ctx.params ?? {}, headers: ctx.headers } as const;
    const input: Record<string, unknown> = {};
    for (const part of ['body', 'query', 'params', 'headers'] as const) {
      const parser = schemas[part];
      if (!parser) continue;
      const unstorable = unstorableTextAt(parts[part]);
      if (unstorable !== undefined) {
        const where = part === 'params' ? 'path' : part;
        throw invalidRequest(`${unstorable ? `${unstorable} (in the request ${where})` : `The request ${where}`} has text with a NUL character or invalid Unicode (an unpaired surrogate).`);
      }
      input[part] = parse(parser, parts[part]);
    }
    refine?.(input as Input<S>);
    ctx.state.input = input;
    await next();
  };
  // test/openapi.test.ts holds each route's schemas to the ones its operation documents.
  return Object.assign(middleware, { schemas });
}
