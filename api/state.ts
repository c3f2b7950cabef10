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
}

declare module 'koa' {
  interface Request {
    /** The parsed JSON body, set by the jsonBody middleware. */
    body?: unknown;
  }
}
