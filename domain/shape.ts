import { Type, type Static, type TProperties, type TSchema, type TUnion } from '@sinclair/typebox';
import { publicIdPattern, type IdKind } from './ids';

/**
 * The response side of the contract, declared once per shape: a TypeBox schema is at once the JSON
 * Schema the OpenAPI document shows for an answer (api/openapi/paths/) and, through Static<>, the
 * type its view function returns, so the two cannot drift. (The request side is yup's: contract/.)
 * These builders say what api/openapi/jsonSchema.ts says for the shapes not yet declared here.
 */
export type { Static };

const described = (description?: string) => (description ? { description } : {});

/** An object with exactly these keys: what a view function builds (Type.Optional marks a key it may leave out). */
export const closed = <P extends TProperties>(properties: P, description?: string) => Type.Object(properties, { additionalProperties: false, ...described(description) });
export const optional = Type.Optional;
export const text = (description?: string) => Type.String(described(description));
export const integer = (options: { minimum?: number; maximum?: number; description?: string } = {}) => Type.Integer(options);
export const boolean = (description?: string) => Type.Boolean(described(description));
/** A string as the pattern says (a hash, a prefixed secret). */
export const matching = (pattern: string, description?: string) => Type.String({ pattern, ...described(description) });
export const uri = (description?: string) => Type.String({ format: 'uri', ...described(description) });
export const timestamp = (description?: string) => Type.String({ format: 'date-time', ...described(description) });
export const constant = <T extends string | boolean>(value: T) => Type.Literal(value);
/** One of these strings. */
export const oneOfValues = <T extends readonly string[]>(values: T, description?: string) => Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...described(description) });
/** The value, or null; `description` says what null means, for both. */
export const orNull = <S extends TSchema>(schema: S, description?: string) => Type.Union([schema, Type.Null()], described(description));
/** Any JSON value, said in words. */
export const anyValue = (description: string) => Type.Unknown({ description });
/** A public id as mintId writes it: the kind's prefix and a lowercase ULID. */
export const publicId = (kind: IdKind, description?: string) => Type.String({ pattern: publicIdPattern(kind), ...described(description) });
export const list = Type.Array;
/** One of these shapes (disjoint: each says its `type`), as JSON Schema's oneOf. */
export const oneOf = <T extends TSchema[]>(alternatives: [...T]) => Type.Unsafe<Static<TUnion<T>>>({ oneOf: alternatives });
/** An object whose keys are free (a caller's metadata, as sent). */
export const freeObject = (description?: string) => Type.Unsafe<Record<string, unknown>>({ type: 'object', ...described(description) });
/** A schema shown once under components.schemas, named where it is used. */
export const ref = <T>(name: string) => Type.Unsafe<T>({ $ref: `#/components/schemas/${name}` });
/** An error record kept on a resource (a failed job item, ingestion, report…): the code and its message, or null. */
export const failureRecord = () => orNull(closed({ code: text(), message: orNull(text()) }));
/** What a DELETE answers: the id, what it was, `deleted: true`. */
export const deletion = <O extends string>(kind: IdKind, object: O) => closed({ id: publicId(kind), object: constant(object), deleted: constant(true) });
/** A page of a list paged by offset: its items, and whether more follow. */
export const offsetPage = <S extends TSchema>(item: S) => closed({ object: constant('list'), data: list(item), has_more: boolean() });
