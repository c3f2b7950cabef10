import type { Sql, Statement } from './sql';

/** Above every row id: a first page starts below it. */
const FIRST_PAGE = '9223372036854775807';

/**
 * Where a newest-first page starts: below the row `after` names, looked up only inside the workspace
 * (`anchor`: `SELECT id FROM <table> WHERE public_id = $1 AND workspace_id = $2`). Undefined when
 * `after` is not the workspace's, so another workspace's id is as unknown as a made-up one.
 */
export async function pageStart(anchor: Statement, workspaceId: number, after: string | undefined, on: Sql): Promise<number | string | undefined> {
  if (!after) return FIRST_PAGE;
  const [row] = await on.rows<{ id: number }>(anchor, [after, workspaceId]);
  return row?.id;
}
