import { CHANNELS } from '../domain/conversations';
import * as yup from 'yup';
import { invalidRequest } from '../domain/errors';
import type { Attachment, ResponseFormat, RunInput, RunOptions } from '../domain/runs';
import type { CallerLimits } from '../domain/limits';
import { schemaProblem } from '../domain/structuredOutput';
import { CONCURRENCY_POLICIES, type ConcurrencyPolicy } from '../domain/turns';
import { parse, refined, validated } from './parse';
import { about } from './about';
import { structuredSchema } from './structuredSchema';

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

const FORMAT_TYPES = ['text', 'json_object', 'json_schema'] as const;
// C0 and C1 controls plus the Unicode line and paragraph separators: each is a newline or unprintable.
const PRINTABLE_ONE_LINE = /^[^\u0000-\u001f\u007f-\u009f\u2028\u2029]*$/;

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** A free-form object; `jsonSchema` says more of it to the document. */
export const plainObject = (jsonSchema: Record<string, unknown> = {}) =>
  yup.mixed<Record<string, unknown>>().test('object', '${path} must be an object', (v) => v === undefined || isObject(v)).meta({ jsonSchema: { type: 'object', ...jsonSchema } });

const responseFormatObject = yup
  .object({
    type: yup.string().oneOf(FORMAT_TYPES).required(),
    name: yup.string().max(64),
    schema: structuredSchema(),
    strict: yup.boolean().oneOf([true], 'response_format.strict only accepts true').meta({ jsonSchema: { description: 'Only `true` is accepted (the default).' } }),
  })
  .noUnknown(true, 'response_format has an unknown key: ${unknown}')
  .strict()
  .meta({ jsonSchema: { if: { properties: { type: { const: 'json_schema' } } }, then: { required: ['schema'] } } });

/** Runtime options, each with the spec's rules; `strict()` so nothing is coerced ("60000" is not a number). */
export const optionsSchema = yup
  .object({
    knowledge_policy: yup.string().oneOf(['auto', 'none', 'required']).meta(about('Default `auto`. Can only restrict retrieval relative to the agent\'s configuration.')),
    memory_policy: yup.string().oneOf(['auto', 'none']).meta(about('Default `auto`.')),
    tool_policy: yup.string().oneOf(['auto', 'none', 'required']).meta(about('Default `auto`.')),
    preview: yup.boolean().meta(about('Run the unpublished configuration; needs scope `agent:preview` (without it: 404). Default false.')),
    stream: yup.boolean().meta(about('Answer as Server-Sent Events. Default false.')),
    timeout_ms: yup
      .number()
      .integer()
      .min(1000, '${path} must be at least 1000')
      .max(120000, '${path} must be at most 120000')
      .meta(about('Default 60000. Out of range is refused, not clamped.')),
    // Checked by parseResponseFormat(): a type name or an object.
    response_format: yup.mixed().meta({
      component: 'ResponseFormat',
      // `json_schema` needs a schema, so only the object form can name it.
      oneOf: [yup.string().oneOf(['text', 'json_object']).required(), responseFormatObject],
      jsonSchema: { description: 'A type name, or an object. With `json_schema` the reply is validated (and repaired at most once) against `schema` and returned as a `json` output item.' },
    }),
  })
  .noUnknown(true, 'options has an unknown key: ${unknown}')
  .strict();

export const OPTION_KEYS = Object.keys(optionsSchema.fields) as (keyof typeof optionsSchema.fields)[];

/** Wrapped so every message carries the full path ("response_format.name ..."), not just "name". */
const responseFormatField = yup.object({ response_format: responseFormatObject.required() }).strict();

const attachmentSchema = yup
  .object({
    ref: yup.string().required().max(512).meta(about('A reference to something already stored, never bytes.')),
    mime_type: yup.string().max(128),
    name: yup.string().max(255),
    type: yup.string().oneOf(['file', 'image', 'audio', 'video', 'document']),
  })
  .noUnknown(true, 'attachments item has an unknown key: ${unknown}')
  .strict()
  .meta({ component: 'Attachment' });

/** The shared runtime input of the three execution endpoints. */
export const runtimeInputSchema = yup
  .object({
    agent: yup.string().min(1).max(200),
    input: yup
      .mixed<string | Record<string, unknown>>()
      .required('input is required')
      .test('input', 'input must be a non-empty string or an object', (v) => (typeof v === 'string' && v.length > 0) || isObject(v))
      .meta({ jsonSchema: { oneOf: [{ type: 'string', minLength: 1 }, { type: 'object', description: 'A structured payload: it reaches the model inside the user message, fenced and labelled.' }] } }),
    attachments: yup.array(attachmentSchema).max(32),
    channel: yup.string().oneOf(CHANNELS).meta(about('Empty string: not stated (falls through to the conversation\'s own channel).')),
    locale: yup.string().max(35),
    metadata: plainObject({ description: 'Free-form.' }),
    request_context: plainObject().meta({
      component: 'RequestContext',
      jsonSchema: {
        type: 'object',
        description: `Caller context. Only \`resource_id\` is acted on: it narrows the run to that document (\`doc_…\`) or collection (\`col_…\`); one the caller cannot reach is 403 \`invalid_context\`. Reserved keys are refused by name, in any letter case: ${[...RESERVED_CONTEXT_KEYS].map((k) => `\`${k}\``).join(', ')}.`,
        properties: { resource_id: { type: 'string' } },
        propertyNames: { not: { enum: [...RESERVED_CONTEXT_KEYS] } },
      },
    }),
    external_ref: yup
      .string()
      .min(1, 'external_ref must not be empty')
      .max(200)
      .matches(PRINTABLE_ONE_LINE, 'external_ref must be printable text without newlines')
      .meta(about('Printable, no newlines; resolving the same value twice returns the same conversation.')),
  })
  .strict();

/**
 * The body of an execution endpoint (and an item of a runs.batch job): the runtime input, with the
 * options flat or under `options`. Unknown keys are ignored, but the caller-forbidden ones are refused.
 */
const executionBody = runtimeInputSchema
  .shape({
    // Read by readExecutionRequest(), flat and nested merged (the nested value wins), after the forbidden keys.
    ...Object.fromEntries(OPTION_KEYS.map((k) => [k, yup.mixed().meta({ as: optionsSchema.fields[k] })])),
    options: yup.mixed().meta({ as: optionsSchema, component: 'RuntimeOptions', jsonSchema: { description: 'An unrecognised key is a 400.' } }),
  })
  .meta({
    jsonSchema: {
      description: `The runtime input. Runtime options may be sent flat or under \`options\` (the nested value wins). Caller-forbidden keys are refused with a 400 naming them: ${Object.keys(FORBIDDEN_OPTIONS).map((k) => `\`${k}\``).join(', ')}. Other unknown top-level keys are ignored.`,
      propertyNames: { not: { enum: Object.keys(FORBIDDEN_OPTIONS) } },
    },
  });

/** The caller's part of a run: what the body says, checked, before anything is resolved. */
export type ExecutionRequest = Pick<RunInput, 'externalRef' | 'input' | 'attachments' | 'channel' | 'locale' | 'metadata' | 'requestContext' | 'options' | 'exchange'> & {
  agent?: string;
  /** A `/v1` caller's limits, which only lower the agent's (domain/limits.ts); /api/v2 takes its limits from the agent. */
  callerLimits?: CallerLimits;
};

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
  // Clients name their dialect (zod's 2020-12, draft-07): the service checks every schema as one dialect of its own.
  const { $schema: _dialect, ...schema } = parsed.schema;
  const problem = schemaProblem(schema);
  if (problem) throw invalidRequest(problem);
  return { type: 'json_schema', ...(parsed.name && { name: parsed.name }), schema, strict: true };
}

/** The body as executionBody passed it: what the handler reads, with the rules that span keys. */
function readExecutionRequest(body: yup.InferType<typeof executionBody> & Record<string, unknown>): ExecutionRequest {
  refuseForbidden(body, '');
  const nested = body.options;
  if (nested !== undefined && !isObject(nested)) throw invalidRequest('options must be an object.');
  if (nested) refuseForbidden(nested, 'options.');
  const flat = Object.fromEntries(OPTION_KEYS.filter((k) => body[k] !== undefined).map((k) => [k, body[k]]));
  const options = validated(optionsSchema, { ...flat, ...nested });
  const requestContext = body.request_context ?? {};
  for (const key of Object.keys(requestContext)) {
    // By name, whatever its case: TENANT_ID smuggles what tenant_id would.
    if (RESERVED_CONTEXT_KEYS.has(key.toLowerCase())) throw invalidRequest(`request_context key "${key}" is reserved: identity, billing and permissions come from the credential.`);
  }
  if (requestContext.resource_id !== undefined && typeof requestContext.resource_id !== 'string') {
    throw invalidRequest('request_context.resource_id must be a string.');
  }
  return {
    agent: body.agent,
    externalRef: body.external_ref,
    input: body.input,
    attachments: (body.attachments ?? []) as Attachment[],
    channel: body.channel ?? '',
    locale: body.locale,
    metadata: body.metadata ?? {},
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

/**
 * The execution body, read and checked whole before anything else happens (no credential is looked
 * at, nothing claimed or spent).
 */
export const ExecutionBody = refined(executionBody, readExecutionRequest);

/** POST /api/v2/responses: the execution body with the agent named in it. */
export const ExecutionBodyNamingAgent = refined(
  executionBody.shape({ agent: yup.string().required('agent is required.').max(200) }),
  (body) => readExecutionRequest(body) as ExecutionRequest & { agent: string },
);

/** POST /api/v2/conversations/{id}/messages: the execution body, and what the message does while earlier turns are open. */
export const MessageBody = refined(
  executionBody.shape({
    concurrency: yup
      .string()
      .oneOf(CONCURRENCY_POLICIES)
      .meta(
        about(
          'While earlier turns of the conversation are running or queued: `enqueue` (the default) waits for them and runs in arrival order; `reject` refuses the message with 409 `conversation_busy`; `interrupt` cancels them (each settles `cancelled`) and runs next. A conversation holds at most 10 open turns.',
        ),
      ),
  }),
  (body) => ({ ...readExecutionRequest(body), concurrency: (body.concurrency ?? 'enqueue') as ConcurrencyPolicy }),
);

/** An execution body outside a request (a runs.batch job's item). */
export const parseExecutionRequest = (body: unknown): ExecutionRequest => parse(ExecutionBody, body);

/**
 * A run's body given before its run (a job's item, a schedule's firings), checked now as the run's
 * body would be, so that what is accepted can run: not streamed (such runs are followed with
 * GET /api/v2/runs/{id}/events) and without an agent (named once, in `agentIn`). Errors begin with `at`.
 */
export function checkRunAhead(body: unknown, o: { at: string; within: string; agentIn: string }): void {
  try {
    const request = parseExecutionRequest(body);
    if (request.options.stream) throw invalidRequest(`stream is not available ${o.within}; follow each run with GET /api/v2/runs/{id}/events.`);
    if (request.agent !== undefined) throw invalidRequest(`the agent is named once, in ${o.agentIn}.`);
  } catch (err) {
    throw invalidRequest(`${o.at}: ${(err as Error).message}`);
  }
}
