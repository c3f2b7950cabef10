/**
 * The part of oidc-provider (9.x, ESM, untyped) this service uses. Configuration is passed through
 * as a plain object: the library validates it when the provider is constructed.
 */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';
  import type Koa from 'koa';

  export interface InteractionDetails {
    uid: string;
    prompt: { name: string; reasons: string[] };
    params: { client_id: string; redirect_uri: string; scope?: string; resource?: string | string[] };
  }

  export interface InteractionResult {
    login?: { accountId: string };
    consent?: { grantId: string };
    error?: string;
    error_description?: string;
  }

  export interface ClientRecord {
    clientId: string;
    clientName?: string;
    redirectUris: string[];
  }

  export interface GrantRecord {
    jti: string;
    addResourceScope(resource: string, scope: string): void;
    rejectResourceScope(resource: string, scope: string): void;
    addOIDCScope(scope: string): void;
    save(): Promise<string>;
  }

  export interface AccessTokenRecord {
    accountId: string;
    clientId: string;
    grantId: string;
    aud?: string;
    exp: number;
    extra?: Record<string, unknown>;
    readonly scopes: Set<string>;
  }

  export class Provider extends Koa {
    constructor(issuer: string, configuration: object);
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
    interactionResult(req: IncomingMessage, res: ServerResponse, result: InteractionResult, options?: { mergeWithLastSubmission?: boolean }): Promise<string>;
    Client: { find(id: string): Promise<ClientRecord | undefined> };
    Grant: { new (init: { accountId: string; clientId: string }): GrantRecord; find(id: string): Promise<GrantRecord | undefined> };
    AccessToken: { find(value: string): Promise<AccessTokenRecord | undefined> };
  }

  class OIDCProviderError extends Error {
    error: string;
    error_description?: string;
    constructor(description?: string);
  }

  export const errors: {
    InvalidTarget: typeof OIDCProviderError;
    InvalidGrant: typeof OIDCProviderError;
    InvalidClientMetadata: typeof OIDCProviderError;
  };
}
