import Router from '@koa/router';
import type { ParsedUrlQuery } from 'node:querystring';
import { decodeCursor, encodeCursor, invalidCursor } from '../../domain/cursor';
import { invalidRequest } from '../../domain/errors';
import { sql, statement } from '../../db/sql';
import { authorize, workspaceOf } from '../middleware/auth';
import type { AppState } from '../state';

const DEFAULT_LIMIT = 20;
/** Larger requests are clamped to this, not refused ("List limit elsewhere: clamped"). */
const MAX_LOG_LIMIT = 100;
const QUERY_PARAMETERS = new Set(['limit', 'cursor']);

interface LogPage {
  limit: number;
  /** Public id of the last entry of the previous page. */
  after?: string;
}

function single(query: ParsedUrlQuery, name: string): string | undefined {
  const value = query[name];
  if (Array.isArray(value)) throw invalidRequest(`${name} may be given only once.`);
  return value;
}

/**
 * Reads the query. An unknown parameter is refused rather than ignored, so a filter the service does
 * not offer never silently returns the unfiltered list.
 */
function parseLogPage(query: ParsedUrlQuery): LogPage {
  for (const name of Object.keys(query)) {
    if (!QUERY_PARAMETERS.has(name)) throw invalidRequest(`unknown query parameter: ${name}`);
  }
  const limitText = single(query, 'limit');
  let limit = DEFAULT_LIMIT;
  if (limitText !== undefined) {
    if (!/^[0-9]+$/.test(limitText) || Number(limitText) < 1) throw invalidRequest('limit must be a positive integer.');
    limit = Math.min(Number(limitText), MAX_LOG_LIMIT);
  }
  const cursor = single(query, 'cursor');
  return { limit, ...(cursor !== undefined && { after: decodeCursor(cursor, 'log') }) };
}

interface LogRow {
  public_id: string;
  run: string;
  agent: string;
  status: string;
  latency_ms: number;
  model: string;
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  cached_tokens: number;
  tool_names: string[];
  error_code: string | null;
  created_at: Date;
}

interface LogEntry {
  id: string;
  run: string;
  agent: string;
  status: string;
  latency_ms: number;
  model: string;
  usage: { input_tokens: number; output_tokens: number; total_tokens: number; cached_tokens: number };
  tool_names: string[];
  error_code: string | null;
  created_at: string;
}

const ANCHOR = statement('SELECT id FROM run_logs WHERE public_id = $1 AND workspace_id = $2');
// Only metadata columns are selected: the log never carries transcript content.
const PAGE = statement(
  `SELECT l.public_id, r.public_id AS run, a.public_id AS agent, l.status, l.latency_ms, l.model,
          l.input_tokens, l.output_tokens, l.total_tokens, l.cached_tokens, l.tool_names, l.error_code, l.created_at
     FROM run_logs l JOIN runs r ON r.id = l.run_id JOIN agents a ON a.id = r.agent_id
    WHERE l.workspace_id = $1 AND l.id < $2
    ORDER BY l.id DESC
    LIMIT $3`,
);
/** Above every row id: the first page starts below it. */
const FIRST_PAGE = '9223372036854775807';

/**
 * One page of the workspace's log, newest first by insertion order (the (workspace_id, id DESC)
 * index serves it). The cursor's public id is turned back into its row only inside the caller's
 * workspace, so another workspace's cursor is refused exactly like a made-up one.
 */
async function listLogs(workspaceId: number, page: LogPage): Promise<{ object: 'list'; data: LogEntry[]; next: string | null }> {
  let before: number | string = FIRST_PAGE;
  if (page.after) {
    const [anchor] = await sql.rows<{ id: number }>(ANCHOR, [page.after, workspaceId]);
    if (!anchor) throw invalidCursor();
    before = anchor.id;
  }
  const rows = await sql.rows<LogRow>(PAGE, [workspaceId, before, page.limit + 1]);
  const data = rows.slice(0, page.limit).map(
    (l): LogEntry => ({
      id: l.public_id,
      run: l.run,
      agent: l.agent,
      status: l.status,
      latency_ms: l.latency_ms,
      model: l.model,
      usage: { input_tokens: l.input_tokens, output_tokens: l.output_tokens, total_tokens: l.total_tokens, cached_tokens: l.cached_tokens },
      tool_names: l.tool_names,
      error_code: l.error_code,
      created_at: l.created_at.toISOString(),
    }),
  );
  return { object: 'list', data, next: rows.length > page.limit ? encodeCursor(data[data.length - 1].id) : null };
}

const authorizeLogs = authorize({ scopes: ['logs:read'], endpoint: 'logs' });

/** GET /api/v2/logs: execution metadata of runs, never transcript content. */
export function logsRoutes(router: Router<AppState>): void {
  router.get('/api/v2/logs', async (ctx) => {
    // Checked before the credential, like every request body and the message list query.
    const page = parseLogPage(ctx.query);
    await authorizeLogs(ctx, async () => {
      ctx.body = await listLogs(workspaceOf(ctx.state.principal).id, page);
    });
  });
}
