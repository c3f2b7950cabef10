import { isRole, ROLE_SCOPES } from './members';
import type { Scope } from './scopes';

/**
 * Who created work that runs later (a job, a schedule), as they stand now. Null fields: the other
 * kind of creator (a key, or a dashboard member).
 */
export interface Creator {
  /** The creating key's scopes and whether it is neither revoked nor expired. */
  keyScopes: string[] | null;
  keyLive: boolean | null;
  /** The creating member's role and whether the member is not revoked. */
  memberRole: string | null;
  memberLive: boolean | null;
  /** False once the OAuth grant the creator's token came from is revoked or expired (true: none, or it stands). */
  grantLive?: boolean;
}

/**
 * Whether the creator still holds `scope`: a key revoked, expired or changed since, a member
 * revoked or moved to a role without it, or an OAuth grant revoked since, does not. Work recorded before creators were (none named) goes on.
 */
export function creatorHolds(creator: Creator | undefined, scope: Scope): boolean {
  if (creator?.grantLive === false) return false;
  return (
    !creator ||
    (creator.keyLive === null && creator.memberLive === null) ||
    (creator.keyLive === true && (creator.keyScopes ?? []).includes(scope)) ||
    (creator.memberLive === true && creator.memberRole !== null && isRole(creator.memberRole) && ROLE_SCOPES[creator.memberRole].includes(scope))
  );
}
