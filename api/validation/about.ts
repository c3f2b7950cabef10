/** The meta of a request schema that only describes it in the OpenAPI document (api/openapi/requestSchema.ts). */
export const about = (description: string) => ({ jsonSchema: { description } });
