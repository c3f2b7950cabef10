import type { Scope } from '../domain/scopes';
import type { KeyKind } from '../domain/apiKeys';
import type { Conversation } from '../db/models';
import type { CreateConversation } from './validation/conversation';
import type { ExecutionRequest } from './validation/runtimeInput';

/** Who is calling: resolved from the credential only, never from the body. */
export interface Principal {
  keyKey: number;
  keyId: string;
  kind: KeyKind;
  environment: 'live' | 'test';
  scopes: ReadonlySet<Scope>;
  workspace: { id: number; publicId: string; tenantRef: string | null; partnerPublicId: string | null } | null;
  partner: { id: number; publicId: string } | null;
  expiresAt: number | null;
}

export interface AppState {
  requestId: string;
  traceId?: string;
  runId?: string;
  principal?: Principal;
  rawBody?: Buffer;
  /** The validated body of an execution request, parsed before authentication. */
  execution?: ExecutionRequest;
  conversationRequest?: CreateConversation;
  /** The conversation a message is posted to, looked up once per request. */
  conversation?: Conversation;
  messagePage?: { after?: string; limit?: number };
  /** Set by idempotent(): what an earlier attempt of this request began, and how to record what this one begins. */
  recovery?: RecoveryPoint;
  /** The answer is not the request's outcome yet (its work goes on): idempotent() does not store it. */
  provisional?: boolean;
}

/** Stripe's recovery point, as an idempotent endpoint sees it. */
export interface RecoveryPoint {
  /** The resource (a run id) an earlier attempt of this request began: attach to it instead of beginning another. */
  resumed?: string;
  /** Records the resource this request is about to begin, before it begins it. */
  begin(resourceId: string): Promise<void>;
}

declare module 'koa' {
  interface Request {
    /** The parsed JSON body, set by the jsonBody middleware. */
    body?: unknown;
  }
}
