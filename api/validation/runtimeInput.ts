import * as yup from 'yup';
import { invalidRequest } from '../../domain/errors';
import type { Attachment, ResponseFormat, RunInput, RunOptions } from '../../domain/runs';
import { validated } from '../middleware/validate';
import { schemaProblem } from '../../domain/structuredOutput';

/** Options callers may never set, with the reason the service decides them itself. */
export const FORBIDDEN_OPTIONS: Readonly<Record<string, string>> = {
  billing_account: 'billing is decided by the service',
  idempotency_key: 'send the Idempotency-Key header instead',
  instructions: 'prompt assembly is decided by the agent configuration',
  knowledge_groups: 'knowledge scope is decided by the agent configuration',
  max_tokens: 'sampling is decided by the agent configuration',
  memory_namespace: 'the memory namespace is decided by the service',
  model: 'routing is decided by the agent configuration',
  prompt: 'prompt assembly is decided by the agent configuration',
  provider: 'routing is decided by the service',
  request_id: 'ids are minted by the service',
  system_prompt: 'prompt assembly is decided by the agent configuration',
  temperature: 'sampling is decided by the agent configuration',
  tools: 'tool availability is decided by the agent configuration',
  top_p: 'sampling is decided by the agent configuration',
  trace_id: 'ids are minted by the service',
  usage_category: 'billing is decided by the service',
};

/** Keys of request_context that would smuggle identity, billing or permissions: refused by name. */
export const RESERVED_CONTEXT_KEYS: ReadonlySet<string> = new Set([
  'api_key', 'application', 'application_id', 'billed_to', 'billing', 'company', 'company_id', 'credential',
  'credential_id', 'entitlements', 'environment', 'environment_id', 'partner', 'partner_id', 'permissions', 'plan',
  'principal', 'principal_id', 'principal_type', 'role', 'roles', 'scope', 'scopes', 'subject', 'subject_id',
  'tenant', 'tenant_id', 'token', 'usage_category',
]);

export const CHANNELS = ['', 'api', 'web', 'website', 'whatsapp', 'phone', 'voice'] as const;
const FORMAT_TYPES = ['text', 'json_object', 'json_schema'] as const;
// C0 and C1 controls plus the Unicode line and paragraph separators: each is a newline or unprintable.
const PRINTABLE_ONE_LINE = /^[^\u0000-\u001f\u007f-\u009f\u2028\u2029]*$/;

const plainObject = () =>
  yup.mixed<Record<string, unknown>>().test('object', '${path} must be an object', (v) => v === undefined || (v !== null && typeof v === 'object' && !Array.isArray(v)));

/** Runtime options, each with the spec's rules; `strict()` so nothing is coerced ("60000" is not a number). */
export const optionsSchema = yup
  .object({
    knowledge_policy: yup.string().oneOf(['auto', 'none', 'required']),
    memory_policy: yup.string().oneOf(['auto', 'none']),
    tool_policy: yup.string().oneOf(['auto', 'none', 'required']),
    preview: yup.boolean(),
    stream: yup.boolean(),
    timeout_ms: yup.number().integer().min(1000, '${path} must be at least 1000').max(120000, '${path} must be at most 120000'),
    response_format: yup.mixed(),
  })
  .noUnknown(true, 'options has an unknown key: ${unknown}')
  .strict();

export const OPTION_KEYS = Object.keys(optionsSchema.fields) as (keyof typeof optionsSchema.fields)[];

const responseFormatObject = yup
  .object({
    type: yup.string().oneOf(FORMAT_TYPES).required(),
    name: yup.string().max(64),
    schema: plainObject(),
    strict: yup.boolean().oneOf([true], 'response_format.strict only accepts true'),
  })
  .noUnknown(true, 'response_format has an unknown key: ${unknown}')
  .strict();

/** Wrapped so every message carries the full path ("response_format.name ..."), not just "name". */
const responseFormatField = yup.object({ response_format: responseFormatObject.required() }).strict();

const attachmentSchema = yup
  .object({
    ref: yup.string().required().max(512),
    mime_type: yup.string().max(128),
    name: yup.string().max(255),
    type: yup.string().oneOf(['file', 'image', 'audio', 'video', 'document']),
  })
  .noUnknown(true, 'attachments item has an unknown key: ${unknown}')
  .strict();

/** The shared runtime input of the three execution endpoints. */
export const runtimeInputSchema = yup
  .object({
    agent: yup.string().min(1).max(200),
    input: yup
      .mixed<string | Record<string, unknown>>()
      .required('input is required')
      .test('input', 'input must be a non-empty string or an object', (v) =>
        (typeof v === 'string' && v.length > 0) || (v !== null && typeof v === 'object' && !Array.isArray(v)),
      ),
    attachments: yup.array(attachmentSchema).max(32),
    channel: yup.string().oneOf(CHANNELS),
    locale: yup.string().max(35),
    metadata: plainObject(),
    request_context: plainObject(),
    external_ref: yup.string().min(1, 'external_ref must not be empty').max(200).matches(PRINTABLE_ONE_LINE, 'external_ref must be printable text without newlines'),
  })
  .strict();

/** The caller's part of a run: what the body says, checked, before anything is resolved. */
export type ExecutionRequest = Pick<RunInput, 'externalRef' | 'input' | 'attachments' | 'channel' | 'locale' | 'metadata' | 'requestContext' | 'options'> & {
  agent?: string;
};

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function refuseForbidden(where: Record<string, unknown>, prefix: string): void {
  for (const name of Object.keys(where)) {
    // Own keys only: a body key such as "constructor" must not find Object.prototype members.
    if (Object.hasOwn(FORBIDDEN_OPTIONS, name)) throw invalidRequest(`"${prefix}${name}" may not be set by callers: ${FORBIDDEN_OPTIONS[name]}.`);
  }
}

export function parseResponseFormat(value: unknown): ResponseFormat {
  if (value === undefined) return { type: 'text' };
  const object = typeof value === 'string' ? { type: value } : value;
  if (!isObject(object)) throw invalidRequest('response_format must be a string or an object.');
  const parsed = validated(responseFormatField, { response_format: object }).response_format;
  if (parsed.type === 'text') return { type: 'text' };
  if (parsed.type === 'json_object') return { type: 'json_object' };
  if (!parsed.schema) throw invalidRequest('response_format.schema is required when type is json_schema.');
  const problem = schemaProblem(parsed.schema);
  if (problem) throw invalidRequest(problem);
  return { type: 'json_schema', ...(parsed.name && { name: parsed.name }), schema: parsed.schema, strict: true };
}

/**
 * Reads and checks the whole body before anything else happens (no credential is looked at, nothing
 * claimed or spent). Options may be flat or under `options`; the nested value wins.
 */
export function parseExecutionRequest(body: unknown): ExecutionRequest {
  if (!isObject(body)) throw invalidRequest('Request body must be a JSON object.');
  refuseForbidden(body, '');
  const nested = body.options;
  if (nested !== undefined && !isObject(nested)) throw invalidRequest('options must be an object.');
  if (nested) refuseForbidden(nested, 'options.');
  const flat = Object.fromEntries(OPTION_KEYS.filter((k) => body[k] !== undefined).map((k) => [k, body[k]]));
  const options = validated(optionsSchema, { ...flat, ...nested });
  const fields = validated(runtimeInputSchema, body);
  const requestContext = fields.request_context ?? {};
  for (const key of Object.keys(requestContext)) {
    // By name, whatever its case: TENANT_ID smuggles what tenant_id would.
    if (RESERVED_CONTEXT_KEYS.has(key.toLowerCase())) throw invalidRequest(`request_context key "${key}" is reserved: identity, billing and permissions come from the credential.`);
  }
  if (requestContext.resource_id !== undefined && typeof requestContext.resource_id !== 'string') {
    throw invalidRequest('request_context.resource_id must be a string.');
  }
  return {
    agent: fields.agent,
    externalRef: fields.external_ref,
    input: fields.input,
    attachments: (fields.attachments ?? []) as Attachment[],
    channel: fields.channel ?? '',
    locale: fields.locale,
    metadata: fields.metadata ?? {},
    requestContext,
    options: {
      knowledgePolicy: (options.knowledge_policy ?? 'auto') as RunOptions['knowledgePolicy'],
      memoryPolicy: (options.memory_policy ?? 'auto') as RunOptions['memoryPolicy'],
      toolPolicy: (options.tool_policy ?? 'auto') as RunOptions['toolPolicy'],
      preview: options.preview ?? false,
      stream: options.stream ?? false,
      timeoutMs: options.timeout_ms ?? 60000,
      responseFormat: parseResponseFormat(options.response_format),
    },
  };
}
