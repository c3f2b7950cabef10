import type { Principal } from '../../callers/principal';
import type { ConversationRecord } from '../../db/conversations';
import type { StoredDocument } from '../../db/documents';
import type { RecoveryPoint } from '../../runs/execute';

export interface AppState {
  requestId: string;
  traceId?: string;
  runId?: string;
  principal?: Principal;
  rawBody?: Buffer;
  /** What validate() parsed from the request (its declared parts); the handler reads only this. */
  input?: unknown;
  /** The endpoint's declared name (authorize()): rate limits and idempotency keys are scoped by it. */
  endpoint?: string;
  /** The conversation a request names, looked up once (null: none in this workspace). */
  conversation?: ConversationRecord | null;
  /** Set by idempotent(): what an earlier attempt of this request began, and how to record what this one begins. */
  recovery?: RecoveryPoint;
  /** The answer is not the request's outcome yet (its work goes on): idempotent() does not store it. */
  provisional?: boolean;
  /** The document a transfer grant names, re-read when the grant was redeemed. */
  document?: StoredDocument;
}

declare module 'koa' {
  interface Request {
    /** The parsed JSON body, set by the jsonBody middleware. */
    body?: unknown;
  }
}
