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
export const integer = (options: { minimum?: number; description?: string } = {}) => Type.Integer(options);
export const timestamp = (description?: string) => Type.String({ format: 'date-time', ...described(description) });
export const constant = <T extends string>(value: T) => Type.Literal(value);
/** One of these strings. */
export const oneOfValues = <T extends readonly string[]>(values: T, description?: string) => Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...described(description) });
export const orNull = <S extends TSchema>(schema: S) => Type.Union([schema, Type.Null()]);
/** Any JSON value, said in words. */
export const anyValue = (description: string) => Type.Unknown({ description });
/** A public id as mintId writes it: the kind's prefix and a lowercase ULID. */
export const publicId = (kind: IdKind, description?: string) => Type.String({ pattern: publicIdPattern(kind), ...described(description) });
export const list = Type.Array;
/** One of these shapes (disjoint: each says its `type`), as JSON Schema's oneOf. */
export const oneOf = <T extends TSchema[]>(alternatives: [...T]) => Type.Unsafe<Static<TUnion<T>>>({ oneOf: alternatives });
/** An object whose keys are free (a caller's metadata, as sent). */
export const freeObject = (description: string) => Type.Unsafe<Record<string, unknown>>({ type: 'object', description });
/** A schema shown once under components.schemas, named where it is used. */
export const ref = <T>(name: string) => Type.Unsafe<T>({ $ref: `#/components/schemas/${name}` });
