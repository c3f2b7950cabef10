import { ROLE_SCOPES } from '../../domain/members';
import { isScope, isStaffScope, type Scope } from '../../domain/scopes';
import { findLiveMember } from '../../db/members';
import { memberPrincipal } from '../../callers/memberPrincipal';
import type { Principal } from '../../callers/principal';
import { oauthProvider } from './provider';
import { resourceOf, type Audience } from './resources';

export { wwwAuthenticate } from './resources';

/** The provider's opaque tokens: 256 random bits as 43 base64url characters; anything else is refused without a lookup. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/**
 * The resource server's side of an OAuth access token: the principal of an opaque token issued for
 * exactly this audience's resource, or undefined (unknown, expired, revoked, another audience, a
 * revoked member, a workspace that is not the one pinned at issue).
 *
 * The principal is the member's, as their dashboard session's is: rate limits and idempotency are
 * scoped by the member's id (`mem_…`), so a member's session and tokens share one credential counter.
 * Its scopes are the token's, cut to what the member's role grants now (a role lowered after consent
 * lowers the token too).
 */
export async function principalFromAccessToken(token: string, audience: Audience): Promise<Principal | undefined> {
  if (!TOKEN_SHAPE.test(token)) return undefined;
  const provider = await oauthProvider();
  const found = await provider.AccessToken.find(token);
  if (!found || found.aud !== resourceOf(audience) || found.exp * 1000 <= Date.now()) return undefined;
  const member = await findLiveMember(found.accountId);
  if (!member || found.extra?.workspace !== member.workspace.publicId) return undefined;
  const role = new Set<string>(ROLE_SCOPES[member.role]);
  const scopes = [...found.scopes].filter((s): s is Scope => isScope(s) && !isStaffScope(s) && role.has(s));
  return memberPrincipal(member, member.workspace, scopes, found.exp * 1000, found.grantId);
}
