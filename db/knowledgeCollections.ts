import { sql, statement, type Sql } from './sql';

const EXISTS = statement('SELECT 1 FROM knowledge_collections WHERE public_id = $1 AND workspace_id = $2');

/** Whether the workspace has this knowledge collection. */
export async function collectionExists(workspaceId: number, publicId: string, on: Sql = sql): Promise<boolean> {
  return (await on.rows(EXISTS, [publicId, workspaceId])).length > 0;
}
