import { encodeCursor, invalidCursor } from '../../domain/cursor';

/**
 * The answer of a cursor-paged list, from up to `limit + 1` rows read newest first: `limit` of them,
 * and a cursor after the last one when there were more. Undefined rows (a cursor whose item is not
 * in this workspace) are refused exactly like a made-up cursor. The spec names the cursor `next` on
 * /logs and `next_cursor` elsewhere.
 */
export function listPage<R extends { public_id: string }>(rows: R[] | undefined, limit: number, shape: (row: R) => unknown, cursorName: 'next' | 'next_cursor' = 'next_cursor', scannedTo?: string) {
  if (!rows) throw invalidCursor();
  // A short page whose scan stopped at its bound (db/runs.ts) goes on from where the scan stopped.
  const next = rows.length > limit ? rows[limit - 1].public_id : scannedTo;
  return { object: 'list', data: rows.slice(0, limit).map((row) => shape(row)), [cursorName]: next === undefined ? null : encodeCursor(next) };
}
