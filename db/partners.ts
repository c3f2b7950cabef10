import { sql, statement, type Sql } from './sql';

export interface PartnerRecord {
  id: number;
  publicId: string;
  name: string;
}

const INSERT = statement('INSERT INTO partners (public_id, name) VALUES ($1, $2) RETURNING id, public_id AS "publicId", name');
const BY_PUBLIC_ID = statement('SELECT id, public_id AS "publicId", name FROM partners WHERE public_id = $1');

export async function insertPartner(p: Omit<PartnerRecord, 'id'>, on: Sql = sql): Promise<PartnerRecord> {
  const [row] = await on.rows<PartnerRecord>(INSERT, [p.publicId, p.name]);
  return row;
}

export async function findPartner(publicId: string, on: Sql = sql): Promise<PartnerRecord | undefined> {
  const [row] = await on.rows<PartnerRecord>(BY_PUBLIC_ID, [publicId]);
  return row;
}
