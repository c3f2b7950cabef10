import type { ErrorCode } from '../../domain/errors';
import type { Scope } from '../../domain/scopes';
import { schemaOf, type Schemas } from '../../contract/parse';
import { errorResponses } from './errors';
import type { JsonSchema } from './jsonSchema';
import { jsonSchemaOf } from './requestSchema';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/**
 * Who may call an operation, as its route's authorize() (or its own check) declares it: a workspace
 * or a partner credential with any one of `scopes`, any credential, the signed token in the path, an
 * operator token, or nobody in particular.
 */
export type Access =
  | { credential: 'workspace' | 'partner'; scopes: readonly [Scope, ...Scope[]] }
  | { credential: 'either' }
  /** POST /mcp: a bearer key or an access token for /mcp with `mcp:connect` (no session cookie). */
  | { credential: 'mcp' }
  | { credential: 'token' | 'operator' | 'metrics' | 'none' };

export interface OperationSpec {
  id: string;
  summary: string;
  description?: string;
  tag: string;
  access: Access;
  /** What the route validates with (its schema.ts export): the document's parameters and JSON body come from it. */
  request?: Schemas;
  /** Parameters no schema validates (MCP's headers, read by the protocol). */
  parameters?: JsonSchema[];
  /** A body no yup schema reads (raw bytes, a JSON-RPC message). */
  body?: JsonSchema;
  /** The answers that are not failures. */
  responses: Record<string, JsonSchema>;
  /** Failures beyond the ones every operation of its access and method can give. */
  errors?: ErrorCode[];
  /** The `/v1` surface answers failures in OpenAI's shape. */
  wire?: 'openai';
}

const UNSAFE = new Set<Method>(['post', 'put', 'patch', 'delete']);

/** Every response carries the request id (api/middleware/requestContext.ts). */
const REQUEST_ID = { 'X-Request-Id': { $ref: '#/components/headers/RequestId' } };

function security(method: Method, access: Access): JsonSchema[] {
  const session = (roles: string[]) => (UNSAFE.has(method) ? { dashboardSession: roles, csrfToken: [] } : { dashboardSession: roles });
  switch (access.credential) {
    case 'workspace':
      return access.scopes.flatMap((s) => [{ companyApiKey: [s] }, { applicationCredential: [s] }, session([s])]);
    case 'partner':
      return access.scopes.map((s) => ({ companyApiKey: [s] }));
    case 'either':
      return [{ companyApiKey: [] }, { applicationCredential: [] }, session([])];
    case 'mcp':
      return [{ companyApiKey: ['mcp:connect'] }, { applicationCredential: ['mcp:connect'] }];
    case 'operator':
      return [{ operatorToken: [] }];
    case 'metrics':
      return [{}, { metricsToken: [] }];
    default:
      return [];
  }
}

function accessText(access: Access): string {
  const scopes = 'scopes' in access ? access.scopes.map((s) => `\`${s}\``) : [];
  const scopeText = scopes.length === 1 ? `**Scope:** ${scopes[0]}.` : `**Scopes:** any one of ${scopes.join(', ')}.`;
  switch (access.credential) {
    case 'workspace':
      return `${scopeText} A workspace credential (a \`tgcc_\` key, an application token or a dashboard session); a partner key is refused with 403.`;
    case 'partner':
      return `${scopeText} A partner key (\`tgpk_\`); a workspace credential is refused with 403.`;
    case 'either':
      return '**Scope:** none; any valid credential, workspace or partner.';
    case 'mcp':
      return '**Scope:** `mcp:connect`, and each tool\'s own. A workspace key (`tgcc_`) or an OAuth access token issued for this server\'s `/mcp` resource; a token for the v2 API is refused (401).';
    case 'token':
      return '**No credential:** the signed token in the path is the credential.';
    case 'operator':
      return '**Credential:** the operator token (`CODEC_OPERATOR_TOKEN`).';
    case 'metrics':
      return '**Credential:** none, or `METRICS_TOKEN` as a bearer token when the operator set one.';
    default:
      return '**No credential.**';
  }
}

/** The failures every operation of this access and method can give: validation, admission (401, 403, 429), a dependency's outage (503), a bug. */
function commonErrors(method: Method, spec: OperationSpec, hasParameters: boolean): ErrorCode[] {
  const codes: ErrorCode[] = ['internal_error'];
  // POST, PUT and PATCH bodies are parsed as JSON on every route (api/middleware/jsonBody.ts); declared parameters are validated.
  // MCP's malformed messages are JSON-RPC errors, not the envelope.
  if (UNSAFE.has(method) && method !== 'delete' && spec.access.credential !== 'mcp') codes.push('invalid_request');
  if (hasParameters && spec.access.credential !== 'mcp') codes.push('invalid_request');
  // MCP's 429 is a JSON-RPC answer (its own response), and its counting fails open.
  if (spec.access.credential === 'mcp') codes.push('authentication_error', 'permission_denied');
  if (spec.access.credential === 'workspace' || spec.access.credential === 'partner' || spec.access.credential === 'either') {
    // Any of them may meet the database, Redis (a call that spends or starts anything; reads are
    // served uncounted) or the workflow engine down: 503 with Retry-After.
    codes.push('authentication_error', 'permission_denied', 'rate_limited', 'service_unavailable');
  }
  // A grant token is redeemed against the database.
  if (spec.access.credential === 'token') codes.push('service_unavailable');
  return codes;
}

function withRequestId(responses: Record<string, JsonSchema>): Record<string, JsonSchema> {
  return Object.fromEntries(Object.entries(responses).map(([status, r]) => [status, { ...r, headers: { ...REQUEST_ID, ...(r.headers as JsonSchema | undefined) } }]));
}

const PARAMETER_PARTS = [
  ['params', 'path'],
  ['query', 'query'],
  ['headers', 'header'],
] as const;

/** `idempotency-key` (as Node gives header names) → `Idempotency-Key`. */
const headerName = (name: string) => name.replace(/(^|-)([a-z])/g, (_, dash: string, letter: string) => dash + letter.toUpperCase());

/** The parameters a route's schemas validate, one per key of each part's object schema. */
function parametersOf(request: Schemas): JsonSchema[] {
  return PARAMETER_PARTS.flatMap(([part, where]) => {
    const parser = request[part];
    if (!parser) return [];
    const object = jsonSchemaOf(schemaOf(parser));
    const required = (object.required as string[] | undefined) ?? [];
    return Object.entries((object.properties ?? {}) as Record<string, JsonSchema>).map(([name, { description, ...schema }]) => ({
      name: where === 'header' ? headerName(name) : name,
      in: where,
      required: where === 'path' || required.includes(name),
      schema,
      ...(typeof description === 'string' && { description }),
    }));
  });
}

/** The schemas each documented operation was built from: test/openapi.test.ts holds them to the routes'. */
export const documentedRequests = new WeakMap<JsonSchema, Schemas>();

/** One OpenAPI operation: its security and scopes from its access, and every failure it can answer. */
export function operation(method: Method, spec: OperationSpec): JsonSchema {
  const scopes = 'scopes' in spec.access ? [...spec.access.scopes] : spec.access.credential === 'mcp' ? ['mcp:connect'] : [];
  const parameters = [...(spec.request ? parametersOf(spec.request) : []), ...(spec.parameters ?? [])];
  const body = spec.request?.body ? jsonBody(jsonSchemaOf(schemaOf(spec.request.body))) : spec.body;
  const built: JsonSchema = {
    operationId: spec.id,
    summary: spec.summary,
    description: [spec.description, accessText(spec.access)].filter(Boolean).join('\n\n'),
    tags: [spec.tag],
    security: security(method, spec.access),
    'x-required-scopes': scopes,
    ...(parameters.length > 0 && { parameters }),
    ...(body && { requestBody: body }),
    responses: withRequestId({ ...spec.responses, ...errorResponses([...commonErrors(method, spec, parameters.length > 0), ...(spec.errors ?? [])], spec.wire === 'openai' ? 'OpenAiError' : 'Error') }),
  };
  if (spec.request) documentedRequests.set(built, spec.request);
  return built;
}

/** A JSON response. */
export function json(description: string, schema: JsonSchema, headers?: Record<string, JsonSchema>): JsonSchema {
  return { description, ...(headers && { headers }), content: { 'application/json': { schema } } };
}

/** A required JSON request body. */
export function jsonBody(schema: JsonSchema): JsonSchema {
  return { required: true, content: { 'application/json': { schema } } };
}

/** Headers of an answer that queued work the caller polls. */
export const LOCATION = { Location: { description: 'Where to poll the resource.', schema: { type: 'string' } } };

/** One resource's part of the document (one file per route folder): its paths and the schemas only they use. */
export interface Resource {
  paths: Record<string, Record<string, JsonSchema>>;
  schemas?: Record<string, JsonSchema>;
}
