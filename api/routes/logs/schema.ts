import { listQuery } from '../../../contract/listQuery';

/** Larger requests are clamped to this, not refused ("List limit elsewhere: clamped"). */
export const MAX_LOG_LIMIT = 100;

/** GET /api/v2/logs: `limit` (clamped) and the opaque `cursor` of a previous page. */
export const ListLogs = { query: listQuery('log', MAX_LOG_LIMIT) };
