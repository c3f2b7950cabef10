import { sql, statement, type Sql } from './sql';

/** The ledger_lines table (written by run settlement in db/runs.ts): what the workspace was billed. */

// The (workspace_id, created_at) range is small (a month of one workspace); days are UTC.
const BY_DAY = statement(
  `SELECT to_char(date_trunc('day', created_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD') AS day, line, sum(credits)::bigint AS credits
     FROM ledger_lines
    WHERE workspace_id = $1 AND created_at >= now() - make_interval(days => $2)
    GROUP BY 1, 2
    ORDER BY 1, 2`,
);

/** Credits billed per UTC day and ledger line (the channel), over the last `days` days. */
export async function creditsByDay(workspaceId: number, days: number, on: Sql = sql): Promise<{ day: string; line: string; credits: number }[]> {
  const rows = await on.rows<{ day: string; line: string; credits: string }>(BY_DAY, [workspaceId, days]);
  return rows.map((r) => ({ day: r.day, line: r.line, credits: Number(r.credits) }));
}
