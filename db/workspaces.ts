import { sql, statement, type Sql } from './sql';

export interface WorkspaceRecord {
  id: number;
  publicId: string;
  name: string;
  credits: number;
  usageThreshold: number | null;
  partnerId: number | null;
  tenantRef: string | null;
}

const COLUMNS = `id, public_id AS "publicId", name, credits, usage_threshold AS "usageThreshold", partner_id AS "partnerId", tenant_ref AS "tenantRef"`;

const INSERT = statement(
  `INSERT INTO workspaces (public_id, name, credits, usage_threshold, partner_id, tenant_ref) VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${COLUMNS}`,
);

export async function insertWorkspace(w: Omit<WorkspaceRecord, 'id'>, on: Sql = sql): Promise<WorkspaceRecord> {
  const [row] = await on.rows<WorkspaceRecord>(INSERT, [w.publicId, w.name, w.credits, w.usageThreshold, w.partnerId, w.tenantRef]);
  return row;
}

const BY_PUBLIC_ID = statement(`SELECT ${COLUMNS} FROM workspaces WHERE public_id = $1`);

export async function findWorkspace(publicId: string, on: Sql = sql): Promise<WorkspaceRecord | undefined> {
  const [row] = await on.rows<WorkspaceRecord>(BY_PUBLIC_ID, [publicId]);
  return row;
}

const CREDIT = statement('UPDATE workspaces SET credits = credits + $2 WHERE public_id = $1 RETURNING credits');

/** Adds credits (a negative amount takes them away); the new balance, or undefined for no such workspace. */
export async function creditWorkspace(publicId: string, amount: number, on: Sql = sql): Promise<number | undefined> {
  const [row] = await on.rows<{ credits: number }>(CREDIT, [publicId, amount]);
  return row?.credits;
}

const BALANCE = statement('SELECT credits FROM workspaces WHERE id = $1');

/** The workspace's credit balance now. */
export async function workspaceBalance(workspaceId: number, on: Sql = sql): Promise<number> {
  const [row] = await on.rows<{ credits: number }>(BALANCE, [workspaceId]);
  return row?.credits ?? 0;
}
