import { sql, statement, type Sql } from './sql';

const EXISTS = statement('SELECT 1 FROM knowledge_collections WHERE public_id = $1 AND workspace_id = $2');
const UPSERT = statement(
  `INSERT INTO knowledge_collections (public_id, workspace_id, name) VALUES ($1, $2, $3)
   ON CONFLICT (workspace_id, name) DO UPDATE SET name = EXCLUDED.name
   RETURNING id`,
);
const BY_PUBLIC_ID = statement('SELECT name FROM knowledge_collections WHERE public_id = $1 AND workspace_id = $2');

/** Whether the workspace has this knowledge collection. */
export async function collectionExists(workspaceId: number, publicId: string, on: Sql = sql): Promise<boolean> {
  return (await on.rows(EXISTS, [publicId, workspaceId])).length > 0;
}

/** The collection's name, when the workspace has it. */
export async function collectionName(workspaceId: number, publicId: string, on: Sql = sql): Promise<string | undefined> {
  const [row] = await on.rows<{ name: string }>(BY_PUBLIC_ID, [publicId, workspaceId]);
  return row?.name;
}

/** The workspace's collection of this name, created by its first ingestion. */
export async function collectionNamed(workspaceId: number, name: string, mintPublicId: () => string, on: Sql = sql): Promise<number> {
  const [row] = await on.rows<{ id: number }>(UPSERT, [mintPublicId(), workspaceId, name]);
  return row.id;
}
