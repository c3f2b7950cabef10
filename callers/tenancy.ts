import { ServiceError, type ErrorCode } from '../domain/errors';

const NOT_FOUND_MESSAGE: Partial<Record<ErrorCode, string>> = {
  agent_not_found: 'No such agent.',
  conversation_not_found: 'No such conversation.',
  document_not_found: 'No such document.',
  extraction_not_found: 'No such extraction.',
  ingestion_not_found: 'No such knowledge ingestion.',
  job_not_found: 'No such job.',
  report_not_found: 'No such report.',
  run_not_found: 'No such run.',
  webhook_delivery_not_found: 'No such webhook delivery.',
  webhook_endpoint_not_found: 'No such webhook endpoint.',
};

/**
 * The one 404 of each kind: another workspace's resource and a missing one answer it byte for byte
 * alike, because every lookup (db/) is scoped by workspace and answers "absent" for both.
 */
export function notFound(code: ErrorCode): ServiceError {
  return new ServiceError(code, NOT_FOUND_MESSAGE[code] ?? 'Not found.');
}
