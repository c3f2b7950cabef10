import { ServiceError } from '../domain/errors';
import type { KeyKind } from '../domain/apiKeys';
import type { Scope } from '../domain/scopes';

/** Who is calling: resolved from the credential only, never from the body. */
export interface Principal {
  /** The API key's database key; null for a signed-in member's dashboard session. */
  keyKey: number | null;
  /** The member's database key when the caller is a dashboard session or an OAuth access token. */
  memberKey: number | null;
  /** The OAuth grant an access token came from: work the caller leaves to run later stops when it is revoked. */
  grantId?: string;
  /** The credential's public id (`key_…`, or the member's `mem_…`): rate limits and idempotency are scoped by it. */
  keyId: string;
  kind: KeyKind;
  environment: 'live' | 'test';
  scopes: ReadonlySet<Scope>;
  workspace: { id: number; publicId: string; tenantRef: string | null; partnerPublicId: string | null } | null;
  partner: { id: number; publicId: string } | null;
  expiresAt: number | null;
}

/** The caller's workspace; partner credentials act on partner endpoints, not inside a workspace. */
export function workspaceOf(principal: Principal | undefined): NonNullable<Principal['workspace']> {
  if (!principal?.workspace) throw new ServiceError('permission_denied', 'This endpoint needs a workspace credential (tgcc_), not a partner credential.');
  return principal.workspace;
}
