import type * as yup from 'yup';

/** The meta of a request schema that only describes it in the OpenAPI document (api/openapi/requestSchema.ts). */
export const about = (description: string) => ({ jsonSchema: { description } });

/** A description added to what a schema's meta already tells the document (a later meta({ jsonSchema }) would replace it). */
export const described = <S extends yup.Schema>(schema: S, description: string): S =>
  schema.meta({ jsonSchema: { ...(schema.describe().meta as { jsonSchema?: Record<string, unknown> } | undefined)?.jsonSchema, description } }) as S;
