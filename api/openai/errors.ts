import { ERROR_TABLE, type ErrorCode } from '../../domain/errors';

/** OpenAI's error object: what its SDKs parse into their error classes (APIError.code, .param, .type). */
export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: ErrorCode };
}

/** The `/v1` surface answers in OpenAI's shapes (DESIGN.md); every other path in the spec's. */
export const OPENAI_PREFIX = '/v1/';

/** OpenAI's error types, by the HTTP status our code answers with. */
function typeOf(code: ErrorCode): string {
  const status = ERROR_TABLE[code].http;
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 402) return 'insufficient_quota';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/** A failure in OpenAI's shape, our code in `code`: the same statuses and codes as /api/v2. */
export function openAiErrorBody(failure: { code: ErrorCode; message: string; param?: string }): OpenAiErrorBody {
  return { error: { message: failure.message, type: typeOf(failure.code), param: failure.param ?? null, code: failure.code } };
}
