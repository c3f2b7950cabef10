import { ERROR_TABLE, RUN_STATUSES, type ErrorCode } from '../../domain/errors';
import { closed, oneOfValues, orNull, publicId, ref, string, type JsonSchema } from './jsonSchema';

const CODES = Object.keys(ERROR_TABLE) as ErrorCode[];

/** The error table as the reference shows it: generated from domain/errors.ts, so it cannot drift. */
const TABLE = ['| code | HTTP | run status |', '| --- | --- | --- |', ...CODES.map((c) => `| \`${c}\` | ${ERROR_TABLE[c].http} | ${ERROR_TABLE[c].runStatus} |`)].join('\n');

/** The spec's run error object, the body of every failure (and the data of `response.failed`). */
export const errorSchemas: Record<string, JsonSchema> = {
  ErrorCode: oneOfValues(CODES, `Clients switch on this.\n\n${TABLE}`),
  RunStatus: oneOfValues(RUN_STATUSES),
  Error: closed(
    {
      error: closed({ code: ref('ErrorCode'), message: string({ description: 'Prose, not for switching.' }), request_id: string({ description: 'Correlation id.' }) }),
      id: publicId('run', 'Only when the failure ended a run that had already started.'),
      status: { ...ref('RunStatus'), description: 'The status the run ended in (only with `id`).' },
      trace_id: string({ description: 'The run\'s trace id (only with `id`).' }),
    },
    { required: ['error'], description: 'The body of every failure. `id`, `status` and `trace_id` are present only when the failure ended a run that had already started.' },
  ),
  OpenAiError: closed(
    {
      error: closed({
        message: string({ description: 'Prose, not for switching.' }),
        type: string({ description: "OpenAI's error type, by the HTTP status: `invalid_request_error`, `authentication_error`, `permission_error`, `not_found_error`, `insufficient_quota`, `rate_limit_error`, `server_error`." }),
        param: orNull(string({ description: 'The request parameter at fault, where there is one.' })),
        code: ref('ErrorCode'),
      }),
    },
    { description: "A failure on the `/v1` surface, in OpenAI's shape: the same HTTP status and code as /api/v2, so OpenAI's SDKs raise their own error classes with our code." },
  ),
};

const STATUS_TEXT: Record<number, string> = {
  400: 'Invalid request',
  401: 'No credential, or one that does not resolve',
  402: 'The workspace cannot spend',
  403: 'Not permitted',
  404: 'Not found (another workspace\'s resource answers the same)',
  409: 'Conflict',
  413: 'Payload too large',
  422: 'Structured output failed',
  429: 'Rate limited: honour Retry-After',
  500: 'Internal error: nothing but the request id is disclosed',
  501: 'Not implemented',
  502: 'A provider or tool failed',
  503: 'A dependency is unavailable',
};

/** Responses carrying Retry-After. */
const RETRY_AFTER = { 'Retry-After': { description: 'Seconds to wait before retrying: until the rate window ends, or until the dependency should be back.', schema: { type: 'string' } } };

/**
 * The error responses of an operation: one per HTTP status, its `error.code` narrowed to the codes
 * that status can carry there; in the spec's envelope (`Error`), or on the `/v1` surface in OpenAI's (`OpenAiError`).
 */
export function errorResponses(codes: Iterable<ErrorCode>, shape: 'Error' | 'OpenAiError' = 'Error'): Record<string, JsonSchema> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set(codes)) byStatus.set(ERROR_TABLE[code].http, [...(byStatus.get(ERROR_TABLE[code].http) ?? []), code]);
  const responses: Record<string, JsonSchema> = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    list.sort();
    responses[String(status)] = {
      description: `${STATUS_TEXT[status] ?? 'Failure'}: ${list.map((c) => `\`${c}\``).join(', ')}.`,
      ...((list.includes('rate_limited') || list.includes('service_unavailable')) && { headers: RETRY_AFTER }),
      content: { 'application/json': { schema: { allOf: [ref(shape), { properties: { error: { properties: { code: { enum: list } } } } }] } } },
    };
  }
  return responses;
}
