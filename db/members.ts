import type { Role } from '../domain/members';
import { sql, statement, type Sql } from './sql';

/** The members table: who may sign in to a workspace's dashboard. */
export interface MemberRecord {
  id: number;
  publicId: string;
  workspaceId: number;
  email: string;
  role: Role;
  passwordHash: string | null;
}

const COLUMNS = `id, public_id AS "publicId", workspace_id AS "workspaceId", email, role, password_hash AS "passwordHash"`;

const INSERT = statement(
  `INSERT INTO members (public_id, workspace_id, email, role, setup_token_hash, setup_expires_at)
   VALUES ($1, $2, $3, $4, $5, $6)
   ON CONFLICT (lower(email)) DO NOTHING
   RETURNING ${COLUMNS}`,
);

/** Undefined when the email already belongs to a member (of any workspace). */
export async function insertMember(
  m: { publicId: string; workspaceId: number; email: string; role: Role; setupTokenHash: string; setupExpiresAt: Date },
  on: Sql = sql,
): Promise<MemberRecord | undefined> {
  const [row] = await on.rows<MemberRecord>(INSERT, [m.publicId, m.workspaceId, m.email, m.role, m.setupTokenHash, m.setupExpiresAt]);
  return row;
}

const BY_EMAIL = statement(`SELECT ${COLUMNS} FROM members WHERE lower(email) = lower($1) AND revoked_at IS NULL`);

export async function findMemberByEmail(email: string, on: Sql = sql): Promise<MemberRecord | undefined> {
  const [row] = await on.rows<MemberRecord>(BY_EMAIL, [email]);
  return row;
}

const BY_SETUP_TOKEN = statement(`SELECT ${COLUMNS} FROM members WHERE setup_token_hash = $1 AND setup_expires_at > now() AND revoked_at IS NULL`);

/** The member a set-up link names, while the link is unused and unexpired. */
export async function findMemberBySetupToken(hash: string, on: Sql = sql): Promise<MemberRecord | undefined> {
  const [row] = await on.rows<MemberRecord>(BY_SETUP_TOKEN, [hash]);
  return row;
}

// Consuming the link and setting the password is one statement: a link sets a password once.
const SET_UP = statement(
  `UPDATE members SET password_hash = $2, setup_token_hash = NULL, setup_expires_at = NULL
    WHERE setup_token_hash = $1 AND setup_expires_at > now() AND revoked_at IS NULL
   RETURNING ${COLUMNS}`,
);

export async function completeSetup(setupTokenHash: string, passwordHash: string, on: Sql = sql): Promise<MemberRecord | undefined> {
  const [row] = await on.rows<MemberRecord>(SET_UP, [setupTokenHash, passwordHash]);
  return row;
}

/** An unrevoked member with their workspace, as an OAuth access token's principal needs them. */
export interface LiveMember {
  id: number;
  publicId: string;
  role: Role;
  workspace: { id: number; publicId: string; tenantRef: string | null; partnerPublicId: string | null };
}

const LIVE_WITH_WORKSPACE = statement(
  `SELECT m.id, m.public_id, m.role, w.id AS ws_key, w.public_id AS ws_id, w.tenant_ref, p.public_id AS ws_partner
     FROM members m
     JOIN workspaces w ON w.id = m.workspace_id
     LEFT JOIN partners p ON p.id = w.partner_id
    WHERE m.public_id = $1 AND m.revoked_at IS NULL`,
);

export async function findLiveMember(publicId: string, on: Sql = sql): Promise<LiveMember | undefined> {
  const [row] = await on.rows<Record<string, any>>(LIVE_WITH_WORKSPACE, [publicId]);
  if (!row) return undefined;
  return {
    id: row.id,
    publicId: row.public_id,
    role: row.role,
    workspace: { id: row.ws_key, publicId: row.ws_id, tenantRef: row.tenant_ref, partnerPublicId: row.ws_partner },
  };
}

const REVOKE = statement(
  `UPDATE members SET revoked_at = coalesce(revoked_at, now()) WHERE public_id = $1 RETURNING public_id AS "publicId", revoked_at AS "revokedAt"`,
);

/** Revokes a member (once: a second revocation keeps the first time); undefined when there is no such member. */
export async function revokeMember(publicId: string, on: Sql = sql): Promise<{ publicId: string; revokedAt: Date } | undefined> {
  const [row] = await on.rows<{ publicId: string; revokedAt: Date }>(REVOKE, [publicId]);
  return row;
}
