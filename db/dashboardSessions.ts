import type { Role } from '../domain/members';
import { sql, statement, type Sql } from './sql';

/** The dashboard_sessions table: a signed-in member's session, found by the hash of its cookie. */
export interface SessionRecord {
  csrfToken: string;
  member: { id: number; publicId: string; email: string; role: Role };
  workspace: { id: number; publicId: string; name: string; tenantRef: string | null; partnerPublicId: string | null };
}

const INSERT = statement('INSERT INTO dashboard_sessions (token_hash, member_id, csrf_token, expires_at) VALUES ($1, $2, $3, $4)');

export async function insertSession(s: { tokenHash: string; memberId: number; csrfToken: string; expiresAt: Date }, on: Sql = sql): Promise<void> {
  await on.rows(INSERT, [s.tokenHash, s.memberId, s.csrfToken, s.expiresAt]);
}

// A revoked member's sessions end with the member: the join checks it on every read.
const LIVE = statement(
  `SELECT s.csrf_token, m.id AS m_key, m.public_id AS m_id, m.email, m.role,
          w.id AS ws_key, w.public_id AS ws_id, w.name AS ws_name, w.tenant_ref, p.public_id AS ws_partner
     FROM dashboard_sessions s
     JOIN members m ON m.id = s.member_id AND m.revoked_at IS NULL
     JOIN workspaces w ON w.id = m.workspace_id
     LEFT JOIN partners p ON p.id = w.partner_id
    WHERE s.token_hash = $1 AND s.ended_at IS NULL AND s.expires_at > now()`,
);

export async function findLiveSession(tokenHash: string, on: Sql = sql): Promise<SessionRecord | undefined> {
  const [row] = await on.rows<Record<string, any>>(LIVE, [tokenHash]);
  if (!row) return undefined;
  return {
    csrfToken: row.csrf_token,
    member: { id: row.m_key, publicId: row.m_id, email: row.email, role: row.role },
    workspace: { id: row.ws_key, publicId: row.ws_id, name: row.ws_name, tenantRef: row.tenant_ref, partnerPublicId: row.ws_partner },
  };
}

const END = statement('UPDATE dashboard_sessions SET ended_at = now() WHERE token_hash = $1 AND ended_at IS NULL');

export async function endSession(tokenHash: string, on: Sql = sql): Promise<void> {
  await on.rows(END, [tokenHash]);
}
