import * as yup from 'yup';

const isObject = (v: unknown) => v !== null && typeof v === 'object' && !Array.isArray(v);

/** A property of the documented subset: a scalar with a description. */
const PROPERTY = {
  type: 'object',
  properties: { type: { enum: ['string', 'number', 'integer', 'boolean'] }, description: { type: 'string', maxLength: 200 } },
  required: ['type'],
  additionalProperties: false,
};

/**
 * What the document promises of a caller's JSON Schema (a structured output's, a report's, an
 * extraction's): an object root of scalar properties. The service takes more: any schema ajv compiles
 * in strict mode within SCHEMA_BOUNDS (domain/structuredOutput.ts), checked at parse. The document
 * shows a subset every value of which is accepted, so a client generated from it is never refused.
 */
const STRUCTURED_SCHEMA = {
  type: 'object',
  description:
    'A JSON Schema with an object root, checked before authorization (size bounds, ajv strict mode, RE2 patterns); one that cannot be enforced is a 400. Shown here is a subset: any schema ajv compiles in strict mode is accepted.',
  required: ['type'],
  properties: {
    type: { const: 'object' },
    properties: { type: 'object', additionalProperties: PROPERTY, maxProperties: 20 },
    required: { type: 'array', items: { type: 'string', maxLength: 64 }, maxItems: 20, uniqueItems: true },
    additionalProperties: { type: 'boolean' },
  },
  additionalProperties: false,
};

/** A caller's JSON Schema: an object here; schemaProblem() checks the rest where it is read. */
export const structuredSchema = (message = '${path} must be an object') =>
  yup
    .mixed<Record<string, unknown>>()
    .test('object', message, (v) => v === undefined || isObject(v))
    .meta({ component: 'StructuredSchema', jsonSchema: STRUCTURED_SCHEMA });
