/**
 * The one table of error codes: every failure the service reports is one of these, with the HTTP
 * status it answers and the status a run ends in when the failure ends a run that had started.
 */
export const ERROR_TABLE = {
  // Not in the spec's table: tool calls that wait for people are beyond it (docs/api.md, "Actions").
  action_not_found: { http: 404, runStatus: 'failed' },
  action_not_pending: { http: 409, runStatus: 'failed' },
  /** `/v1/chat/completions` only: its wire has no shape for a run still waiting for an approver. */
  action_required: { http: 409, runStatus: 'failed' },
  agent_not_available: { http: 409, runStatus: 'failed' },
  agent_not_found: { http: 404, runStatus: 'failed' },
  authentication_error: { http: 401, runStatus: 'failed' },
  // Not in the spec's table: a message refused (or a queued turn given up) while its conversation's earlier turns are open (docs/api.md, "Turns in order").
  conversation_busy: { http: 409, runStatus: 'failed' },
  conversation_not_found: { http: 404, runStatus: 'failed' },
  // Not in the spec's table (its documents and knowledge shapes are "not shown"): the same kinds of
  // answer as its own codes, for documents, ingestions and transfer grants (docs/api.md, "Documents").
  document_already_uploaded: { http: 409, runStatus: 'failed' },
  document_not_found: { http: 404, runStatus: 'failed' },
  document_not_uploaded: { http: 409, runStatus: 'failed' },
  document_upload_in_progress: { http: 409, runStatus: 'failed' },
  ingestion_not_found: { http: 404, runStatus: 'failed' },
  extraction_not_found: { http: 404, runStatus: 'failed' },
  idempotency_conflict: { http: 409, runStatus: 'failed' },
  internal_error: { http: 500, runStatus: 'failed' },
  invalid_context: { http: 403, runStatus: 'failed' },
  job_not_found: { http: 404, runStatus: 'failed' },
  invalid_request: { http: 400, runStatus: 'failed' },
  // Not in the spec's table: the dashboard's keys and member set-up links (docs/operations.md, "Dashboard").
  key_not_found: { http: 404, runStatus: 'failed' },
  setup_link_not_found: { http: 404, runStatus: 'failed' },
  knowledge_unavailable: { http: 503, runStatus: 'failed' },
  // Not in the spec's table: GET and DELETE on /mcp (its transport table: 405).
  method_not_allowed: { http: 405, runStatus: 'failed' },
  not_implemented: { http: 501, runStatus: 'failed' },
  payload_too_large: { http: 413, runStatus: 'failed' },
  permission_denied: { http: 403, runStatus: 'failed' },
  provider_unavailable: { http: 502, runStatus: 'failed' },
  rate_limited: { http: 429, runStatus: 'blocked' },
  report_not_found: { http: 404, runStatus: 'failed' },
  run_not_found: { http: 404, runStatus: 'failed' },
  // Not in the spec's table: schedules are beyond it (docs/api.md, "Schedules").
  schedule_not_found: { http: 404, runStatus: 'failed' },
  // Not in the spec's table: a workspace has at most SCHEDULES_PER_WORKSPACE schedules.
  schedule_limit_reached: { http: 409, runStatus: 'failed' },
  // Not in the spec's table: workspace secrets are beyond it (docs/api.md, "Secrets").
  secret_not_found: { http: 404, runStatus: 'failed' },
  secret_limit_reached: { http: 409, runStatus: 'failed' },
  // Not in the spec's table: a dependency the request cannot safely go without (Redis for rate limits) is down.
  service_unavailable: { http: 503, runStatus: 'failed' },
  storage_quota_exceeded: { http: 409, runStatus: 'failed' },
  structured_output_failed: { http: 422, runStatus: 'failed' },
  tool_execution_failed: { http: 502, runStatus: 'failed' },
  usage_blocked: { http: 402, runStatus: 'blocked' },
  // Not in the spec's table (partner webhook shapes beyond the fields given are "not shown"): the
  // same kinds of answer as its own codes (docs/webhooks.md).
  webhook_delivery_in_progress: { http: 409, runStatus: 'failed' },
  webhook_delivery_not_found: { http: 404, runStatus: 'failed' },
  webhook_endpoint_disabled: { http: 409, runStatus: 'failed' },
  webhook_endpoint_limit_reached: { http: 409, runStatus: 'failed' },
  webhook_endpoint_not_found: { http: 404, runStatus: 'failed' },
} as const;

export type ErrorCode = keyof typeof ERROR_TABLE;

export const RUN_STATUSES = ['queued', 'running', 'completed', 'failed', 'cancelled', 'blocked'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(ERROR_TABLE, value);
}

/** A failure the caller is told about: thrown anywhere, turned into the envelope in one place. */
export class ServiceError extends Error {
  readonly code: ErrorCode;
  /** Response headers that belong to this failure (for example Retry-After). */
  readonly headers: Record<string, string>;
  /** The request parameter at fault, where one is (OpenAI's error shape names it: api/openai/errors.ts). */
  readonly param: string | undefined;

  constructor(code: ErrorCode, message: string, headers: Record<string, string> = {}, param?: string) {
    super(message);
    this.name = 'ServiceError';
    this.code = code;
    this.headers = headers;
    this.param = param;
  }

  get httpStatus(): number {
    return ERROR_TABLE[this.code].http;
  }

  get runStatus(): RunStatus {
    return ERROR_TABLE[this.code].runStatus;
  }
}

/** The spec's run error object: the body of every failure, and the data of `response.failed`. */
export interface ErrorBody {
  error: { code: ErrorCode; message: string; request_id: string };
  /** Only when the failure ended a run that had started. */
  id?: string;
  status?: RunStatus;
  trace_id?: string;
}

/** The one builder of that object: the HTTP envelope, a failed run's answer and its stream event all use it. */
export function errorBody(failure: { code: ErrorCode; message: string }, requestId: string, run?: { id: string; status: RunStatus; trace_id: string }): ErrorBody {
  return { error: { code: failure.code, message: failure.message, request_id: requestId }, ...(run && { id: run.id, status: run.status, trace_id: run.trace_id }) };
}

export const invalidRequest = (message: string, param?: string) => new ServiceError('invalid_request', message, {}, param);
