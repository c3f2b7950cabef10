import { convertSchema } from '@sodaru/yup-to-json-schema';
import type { Converter, Converters } from '@sodaru/yup-to-json-schema/dist/types';
import arrayConverter from '@sodaru/yup-to-json-schema/dist/converters/array';
import booleanConverter from '@sodaru/yup-to-json-schema/dist/converters/boolean';
import numberConverter from '@sodaru/yup-to-json-schema/dist/converters/number';
import stringConverter from '@sodaru/yup-to-json-schema/dist/converters/string';
import type * as yup from 'yup';
import type { JsonSchema } from './jsonSchema';

/**
 * The request side of the document, read from the yup schemas the routes validate with
 * (`describe()`), so the two cannot drift. What yup says itself (types, limits, enums, required keys,
 * closed objects) converts as is. A custom test() has no words in `describe()`: its schema says the
 * rule with `meta({ jsonSchema })`, and a test() without it stops the document from building.
 */

/** What the meta of a request schema may carry for the document. */
export interface RequestMeta {
  /** Merged over the converted schema: what a custom test() checks, a description, an example. */
  jsonSchema?: JsonSchema;
  /** Shown once under components.schemas and referenced wherever it is used. */
  component?: string;
  /** Alternatives yup cannot say (a string or an object), each a yup schema. */
  oneOf?: yup.Schema[];
  /** Documented as this schema: a part the parser's read() checks itself, later (after other rules). */
  as?: yup.Schema;
}

type Description = yup.SchemaDescription & {
  meta?: RequestMeta;
  fields?: Record<string, Description>;
  tests: { name?: string; params?: Record<string, unknown> }[];
};

/** Tests the converters turn into keywords; any other needs meta({ jsonSchema }). */
const SAID = new Set(['required', 'min', 'max', 'length', 'matches', 'integer', 'noUnknown']);

/** Components named by meta({ component }), filled as the operations are built (api/openapi/document.ts lists them). */
export const requestComponents: Record<string, JsonSchema> = {};

const asConverter = (f: (d: Description, all: Converters) => JsonSchema) => f as unknown as Converter;

/** Each type's keywords, without the meta (said() adds it). */
const TYPES: Record<string, Converter> = {
  string: asConverter((d, all) => {
    const schema = stringConverter({ ...d, meta: undefined }, all) as JsonSchema;
    // yup's required() refuses the empty string too.
    if (!d.optional && !((schema.minLength as number) >= 1)) schema.minLength = 1;
    return schema;
  }),
  number: asConverter((d, all) => numberConverter({ ...d, meta: undefined }, all) as JsonSchema),
  boolean: asConverter((d, all) => booleanConverter({ ...d, meta: undefined }, all) as JsonSchema),
  array: asConverter((d, all) => arrayConverter({ ...d, meta: undefined }, all) as JsonSchema),
  // mixed() says nothing of its type: its meta does.
  mixed: asConverter((d) => (d.oneOf.length > 0 ? { enum: d.oneOf } : {})),
  object: asConverter((d, all) => {
    const fields = Object.entries(d.fields ?? {});
    const properties = Object.fromEntries(fields.map(([name, field]) => [name, all[field.type as keyof Converters](field, all)]));
    const required = fields.filter(([, field]) => !field.optional).map(([name]) => name);
    return {
      type: d.nullable ? ['object', 'null'] : 'object',
      ...(fields.length > 0 && { properties }),
      ...(required.length > 0 && { required }),
      ...(d.tests.some((t) => t.name === 'noUnknown') && { additionalProperties: false }),
    };
  }),
};

/** One node: its type's keywords, then its meta; a rule no keyword and no meta says is an error. */
function said(type: string, convert: Converter): Converter {
  return asConverter((d, all) => {
    const meta = d.meta ?? {};
    const rule = d.tests.map((t) => t.name).find((name) => name !== undefined && !SAID.has(name));
    if (rule && !meta.jsonSchema && !meta.oneOf && !meta.as) throw new Error(`A ${type} schema's test "${rule}" is not in the OpenAPI document: say it with meta({ jsonSchema }).`);
    const schema: JsonSchema = meta.as
      ? (convertSchema(meta.as, { converters: all }) as JsonSchema)
      : meta.oneOf
        ? { oneOf: meta.oneOf.map((s) => convertSchema(s, { converters: all })) }
        : (convert(d as never, all) as JsonSchema);
    Object.assign(schema, meta.jsonSchema);
    if (!meta.component) return schema;
    const known = requestComponents[meta.component];
    if (known && JSON.stringify(known) !== JSON.stringify(schema)) throw new Error(`Two request schemas are named ${meta.component} in the OpenAPI document.`);
    requestComponents[meta.component] = schema;
    return { $ref: `#/components/schemas/${meta.component}` };
  });
}

const CONVERTERS = Object.fromEntries(Object.entries(TYPES).map(([type, convert]) => [type, said(type, convert)])) as unknown as Converters;

/** The JSON Schema (2020-12) of a yup schema, with its meta. */
export function jsonSchemaOf(schema: yup.Schema): JsonSchema {
  return convertSchema(schema, { converters: CONVERTERS }) as JsonSchema;
}
