import type { KeyKind } from '../domain/apiKeys';
import { sql, statement, type Sql } from './sql';

/** A live (unrevoked) key with its owner, as authentication needs it. */
export interface KeyRecord {
  id: number;
  publicId: string;
  kind: KeyKind;
  environment: 'live' | 'test';
  scopes: string[];
  expiresAt: Date | null;
  workspace: { id: number; publicId: string; tenantRef: string | null; partnerPublicId: string | null } | null;
  partner: { id: number; publicId: string } | null;
}

const BY_HASH = statement(
  `SELECT k.id, k.public_id, k.kind, k.environment, k.scopes, k.expires_at,
          w.id AS ws_key, w.public_id AS ws_id, w.tenant_ref, wp.public_id AS ws_partner,
          p.id AS ptn_key, p.public_id AS ptn_id
     FROM api_keys k
     LEFT JOIN workspaces w ON w.id = k.workspace_id
     LEFT JOIN partners wp ON wp.id = w.partner_id
     LEFT JOIN partners p ON p.id = k.partner_id
    WHERE k.key_hash = $1 AND k.revoked_at IS NULL`,
);

/** The unrevoked key with this hash (keys are stored only as hashes). */
export async function findLiveKeyByHash(hash: string, on: Sql = sql): Promise<KeyRecord | undefined> {
  const [row] = await on.rows<Record<string, any>>(BY_HASH, [hash]);
  if (!row) return undefined;
  return {
    id: row.id,
    publicId: row.public_id,
    kind: row.kind,
    environment: row.environment,
    scopes: row.scopes,
    expiresAt: row.expires_at,
    workspace: row.ws_key === null ? null : { id: row.ws_key, publicId: row.ws_id, tenantRef: row.tenant_ref, partnerPublicId: row.ws_partner },
    partner: row.ptn_key === null ? null : { id: row.ptn_key, publicId: row.ptn_id },
  };
}

const LIVE_HASHES = statement('SELECT key_hash FROM api_keys WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())');

/** The hashes of every key that may authenticate now (unrevoked, unexpired): what each API instance's filter is built from. */
export async function liveKeyHashes(on: Sql = sql): Promise<string[]> {
  return (await on.rows<{ key_hash: string }>(LIVE_HASHES, [])).map((r) => r.key_hash);
}

const TOUCH = statement('UPDATE api_keys SET last_used_at = now() WHERE id = $1');

export async function touchKey(id: number, on: Sql = sql): Promise<void> {
  await on.rows(TOUCH, [id]);
}

const INSERT = statement(
  `INSERT INTO api_keys (public_id, kind, workspace_id, partner_id, name, environment, key_hash, key_hint, scopes, expires_at)
   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
);

export interface NewKey {
  publicId: string;
  kind: KeyKind;
  workspaceId: number | null;
  partnerId: number | null;
  name: string | null;
  environment: 'live' | 'test';
  hash: string;
  hint: string;
  scopes: string[];
  expiresAt: Date | null;
}

export async function insertKey(k: NewKey, on: Sql = sql): Promise<void> {
  await on.rows(INSERT, [k.publicId, k.kind, k.workspaceId, k.partnerId, k.name, k.environment, k.hash, k.hint, k.scopes, k.expiresAt]);
}

const REVOKE = statement(
  `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE public_id = $1 RETURNING public_id AS "publicId", revoked_at AS "revokedAt"`,
);

/** Revokes a key (once: a second revocation keeps the first time); undefined when there is no such key. */
export async function revokeKey(publicId: string, on: Sql = sql): Promise<{ publicId: string; revokedAt: Date } | undefined> {
  const [row] = await on.rows<{ publicId: string; revokedAt: Date }>(REVOKE, [publicId]);
  return row;
}

/** A workspace's key as the dashboard lists it: never its hash, only the hint of its last characters. */
export interface KeyListing {
  publicId: string;
  name: string | null;
  environment: 'live' | 'test';
  hint: string;
  scopes: string[];
  createdAt: Date;
  lastUsedAt: Date | null;
  expiresAt: Date | null;
  revokedAt: Date | null;
}

const LISTING = `public_id AS "publicId", name, environment, key_hint AS hint, scopes, created_at AS "createdAt",
  last_used_at AS "lastUsedAt", expires_at AS "expiresAt", revoked_at AS "revokedAt"`;
const OF_WORKSPACE = statement(`SELECT ${LISTING} FROM api_keys WHERE workspace_id = $1 ORDER BY revoked_at IS NOT NULL, id DESC LIMIT 200`);

/** The workspace's keys, live ones first, newest first. */
export function workspaceKeys(workspaceId: number, on: Sql = sql): Promise<KeyListing[]> {
  return on.rows<KeyListing>(OF_WORKSPACE, [workspaceId]);
}

const ONE_OF_WORKSPACE = statement(`SELECT ${LISTING} FROM api_keys WHERE public_id = $1 AND workspace_id = $2`);

export async function findWorkspaceKey(workspaceId: number, publicId: string, on: Sql = sql): Promise<KeyListing | undefined> {
  const [row] = await on.rows<KeyListing>(ONE_OF_WORKSPACE, [publicId, workspaceId]);
  return row;
}
