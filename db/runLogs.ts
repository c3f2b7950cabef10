import { pageStart } from './paging';
import { sql, statement, type Sql } from './sql';
import type { LogView } from '../domain/logEntry';

/** A log row is what the log entry's view reads (domain/logEntry.ts). */
export type LogRow = LogView;

const ANCHOR = statement('SELECT id FROM run_logs WHERE public_id = $1 AND workspace_id = $2');
// Only metadata columns are selected: the log never carries transcript content.
const PAGE = statement(
  `SELECT l.public_id, r.public_id AS run, a.public_id AS agent, l.status, l.latency_ms, l.model,
          l.input_tokens, l.output_tokens, l.total_tokens, l.cached_tokens, l.tool_names, l.error_code, l.uncharged_credits::int AS uncharged_credits, l.refused, l.usage_estimated, l.history_omitted, l.knowledge, l.created_at
     FROM run_logs l JOIN runs r ON r.id = l.run_id JOIN agents a ON a.id = r.agent_id
    WHERE l.workspace_id = $1 AND l.id < $2
    ORDER BY l.id DESC
    LIMIT $3`,
);

/**
 * Up to `limit` log entries of the workspace, newest first by insertion order (the (workspace_id, id
 * DESC) index serves it), after the entry `after`. The anchor is looked up only inside the workspace:
 * undefined when it is not there (another workspace's entry is as unknown as a made-up one).
 */
export async function logPage(workspaceId: number, after: string | undefined, limit: number, on: Sql = sql): Promise<LogRow[] | undefined> {
  const before = await pageStart(ANCHOR, workspaceId, after, on);
  return before === undefined ? undefined : on.rows<LogRow>(PAGE, [workspaceId, before, limit]);
}
