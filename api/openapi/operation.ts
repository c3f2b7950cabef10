import type { ErrorCode } from '../../domain/errors';
import type { Scope } from '../../domain/scopes';
import { errorResponses } from './errors';
import type { JsonSchema } from './jsonSchema';

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
  parameters?: JsonSchema[];
  body?: JsonSchema;
  /** The answers that are not failures. */
  responses: Record<string, JsonSchema>;
  /** Failures beyond the ones every operation of its access and method can give. */
  errors?: ErrorCode[];
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

/** The failures every operation of this access and method can give: validation, admission (401, 403, 429), a closed-failing limiter, a bug. */
function commonErrors(method: Method, spec: OperationSpec): ErrorCode[] {
  const codes: ErrorCode[] = ['internal_error'];
  // POST, PUT and PATCH bodies are parsed as JSON on every route (api/middleware/jsonBody.ts); declared parameters are validated.
  // MCP's malformed messages are JSON-RPC errors, not the envelope.
  if (UNSAFE.has(method) && method !== 'delete' && spec.access.credential !== 'mcp') codes.push('invalid_request');
  if (spec.parameters?.length && spec.access.credential !== 'mcp') codes.push('invalid_request');
  // MCP's 429 is a JSON-RPC answer (its own response), and its counting fails open.
  if (spec.access.credential === 'mcp') codes.push('authentication_error', 'permission_denied');
  if (spec.access.credential === 'workspace' || spec.access.credential === 'partner' || spec.access.credential === 'either') {
    codes.push('authentication_error', 'permission_denied', 'rate_limited');
    // Without Redis a call that spends or starts anything fails closed; reads are served uncounted.
    if (method !== 'get') codes.push('service_unavailable');
  }
  return codes;
}

function withRequestId(responses: Record<string, JsonSchema>): Record<string, JsonSchema> {
  return Object.fromEntries(Object.entries(responses).map(([status, r]) => [status, { ...r, headers: { ...REQUEST_ID, ...(r.headers as JsonSchema | undefined) } }]));
}

/** One OpenAPI operation: its security and scopes from its access, and every failure it can answer. */
export function operation(method: Method, spec: OperationSpec): JsonSchema {
  const scopes = 'scopes' in spec.access ? [...spec.access.scopes] : spec.access.credential === 'mcp' ? ['mcp:connect'] : [];
  return {
    operationId: spec.id,
    summary: spec.summary,
    description: [spec.description, accessText(spec.access)].filter(Boolean).join('\n\n'),
    tags: [spec.tag],
    security: security(method, spec.access),
    'x-required-scopes': scopes,
    ...(spec.parameters?.length && { parameters: spec.parameters }),
    ...(spec.body && { requestBody: spec.body }),
    responses: withRequestId({ ...spec.responses, ...errorResponses([...commonErrors(method, spec), ...(spec.errors ?? [])]) }),
  };
}

/** A JSON response. */
export function json(description: string, schema: JsonSchema, headers?: Record<string, JsonSchema>): JsonSchema {
  return { description, ...(headers && { headers }), content: { 'application/json': { schema } } };
}

/** A required JSON request body. */
export function jsonBody(schema: JsonSchema, description?: string): JsonSchema {
  return { required: true, ...(description && { description }), content: { 'application/json': { schema } } };
}

/** Headers of an answer that queued work the caller polls. */
export const LOCATION = { Location: { description: 'Where to poll the resource.', schema: { type: 'string' } } };

/** A path parameter. */
export function pathParam(name: string, schema: JsonSchema, description?: string): JsonSchema {
  return { name, in: 'path', required: true, schema, ...(description && { description }) };
}

/** A query parameter. */
export function queryParam(name: string, schema: JsonSchema, description?: string): JsonSchema {
  return { name, in: 'query', required: false, schema, ...(description && { description }) };
}

/** One resource's part of the document (one file per route folder): its paths and the schemas only they use. */
export interface Resource {
  paths: Record<string, Record<string, JsonSchema>>;
  schemas?: Record<string, JsonSchema>;
}
