import * as yup from 'yup';
import { once } from '../../../contract/listQuery';
import { refined } from '../../../contract/parse';

/** How far back usage can be read per day; the ledger keeps more, the per-day view is for recent use. */
export const MAX_USAGE_DAYS = 90;
const DEFAULT_USAGE_DAYS = 30;

const query = yup
  .object({
    days: once('days', { type: 'integer', minimum: 1, maximum: MAX_USAGE_DAYS, default: DEFAULT_USAGE_DAYS }).test('days', `days must be an integer from 1 to ${MAX_USAGE_DAYS}.`, (v) => v === undefined || (/^[0-9]+$/.test(v) && Number(v) >= 1 && Number(v) <= MAX_USAGE_DAYS)),
  })
  .noUnknown(true, 'unknown query parameter: ${unknown}')
  .strict();

/** GET /api/v2/usage: `days`, the window ending today (UTC). */
export const ReadUsage = {
  query: refined(query, ({ days }): { days: number } => ({ days: days === undefined ? DEFAULT_USAGE_DAYS : Number(days) })),
};
