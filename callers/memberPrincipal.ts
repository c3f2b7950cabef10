import type { Scope } from '../domain/scopes';
import type { Principal } from './principal';

/**
 * A workspace member as the caller (a dashboard session, or an OAuth token they consented to): their
 * workspace, these scopes, and their `mem_…` id as the credential that rate limits and idempotency
 * keys are scoped by.
 */
export function memberPrincipal(member: { id: number; publicId: string }, workspace: NonNullable<Principal['workspace']>, scopes: Iterable<Scope>, expiresAt: number | null, grantId?: string): Principal {
  return {
    ...(grantId && { grantId }),
    keyKey: null,
    memberKey: member.id,
    keyId: member.publicId,
    kind: 'workspace',
    environment: 'live',
    scopes: new Set(scopes),
    workspace,
    partner: null,
    expiresAt,
  };
}
