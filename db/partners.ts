import { sql, statement, type Sql } from './sql';

export interface PartnerRecord {
  id: number;
  publicId: string;
  name: string;
  /** Deliveries per second to its webhook endpoints; null: the configured default. */
  webhookRate: number | null;
}

const COLUMNS = 'id, public_id AS "publicId", name, webhook_rate AS "webhookRate"';
const INSERT = statement(`INSERT INTO partners (public_id, name, webhook_rate) VALUES ($1, $2, $3) RETURNING ${COLUMNS}`);
const BY_PUBLIC_ID = statement(`SELECT ${COLUMNS} FROM partners WHERE public_id = $1`);

export async function insertPartner(p: Omit<PartnerRecord, 'id'>, on: Sql = sql): Promise<PartnerRecord> {
  const [row] = await on.rows<PartnerRecord>(INSERT, [p.publicId, p.name, p.webhookRate]);
  return row;
}

export async function findPartner(publicId: string, on: Sql = sql): Promise<PartnerRecord | undefined> {
  const [row] = await on.rows<PartnerRecord>(BY_PUBLIC_ID, [publicId]);
  return row;
}
