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
