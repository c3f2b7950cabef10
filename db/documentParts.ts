import { sql, statement, type Sql } from './sql';

/** The PostgreSQL document store's bytes: each upload's parts, in order, under its upload key. */

const INSERT = statement('INSERT INTO document_parts (document_id, upload_key, seq, data) VALUES ($1, $2, $3, $4)');
const READ = statement('SELECT data FROM document_parts WHERE document_id = $1 AND upload_key = $2 AND seq = $3');
const DELETE_KEY = statement('DELETE FROM document_parts WHERE document_id = $1 AND upload_key = $2');
const DELETE_ALL = statement('DELETE FROM document_parts WHERE document_id = $1');
const DELETE_OTHERS = statement('DELETE FROM document_parts WHERE document_id = $1 AND upload_key <> $2');

export async function insertPart(documentKey: number, uploadKey: string, seq: number, data: Buffer, on: Sql = sql): Promise<void> {
  await on.rowCount(INSERT, [documentKey, uploadKey, seq, data]);
}

/** Part `seq` of an upload; undefined past its last part. */
export async function readPart(documentKey: number, uploadKey: string, seq: number, on: Sql = sql): Promise<Buffer | undefined> {
  const [row] = await on.rows<{ data: Buffer }>(READ, [documentKey, uploadKey, seq]);
  return row?.data;
}

export async function deleteParts(documentKey: number, uploadKey: string, on: Sql = sql): Promise<void> {
  await on.rowCount(DELETE_KEY, [documentKey, uploadKey]);
}

/** Every upload's parts but the one kept (earlier attempts that died or lost the race). */
export async function deletePartsExcept(documentKey: number, keptKey: string, on: Sql = sql): Promise<void> {
  await on.rowCount(DELETE_OTHERS, [documentKey, keptKey]);
}

export async function deleteAllParts(documentKey: number, on: Sql = sql): Promise<void> {
  await on.rowCount(DELETE_ALL, [documentKey]);
}
