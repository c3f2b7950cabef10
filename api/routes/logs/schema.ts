import * as yup from 'yup';
import { decodeCursor } from '../../../domain/cursor';
import { validated } from '../../middleware/validate';

const DEFAULT_LIMIT = 20;
/** Larger requests are clamped to this, not refused ("List limit elsewhere: clamped"). */
export const MAX_LOG_LIMIT = 100;

const once = (name: string) => yup.mixed<string>().test('once', `${name} may be given only once.`, (v) => !Array.isArray(v));

/** An unknown parameter is refused rather than ignored, so a filter the service does not offer never silently returns the unfiltered list. */
const logQuery = yup
  .object({
    limit: once('limit').test('limit', 'limit must be a positive integer.', (v) => v === undefined || (/^[0-9]+$/.test(v) && Number(v) >= 1)),
    cursor: once('cursor'),
  })
  .noUnknown(true, 'unknown query parameter: ${unknown}')
  // Strict: without it yup strips unknown keys instead of refusing them.
  .strict();

/** GET /api/v2/logs: `limit` (clamped) and the opaque `cursor` of a previous page. */
export const ListLogs = {
  query: (value: unknown): { limit: number; after?: string } => {
    const { limit, cursor } = validated(logQuery, value);
    return { limit: limit === undefined ? DEFAULT_LIMIT : Math.min(Number(limit), MAX_LOG_LIMIT), ...(cursor !== undefined && { after: decodeCursor(cursor, 'log') }) };
  },
};
