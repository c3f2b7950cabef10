import { closed, constant, integer, list, text, type Static } from './shape';

/** GET /api/v2/usage's answer: its shape, declared once for the view and the OpenAPI document. */
export const UsageReport = closed({
  object: constant('usage'),
  balance: integer({ description: 'Credits left.' }),
  days: integer({ minimum: 1 }),
  total_credits: integer({ minimum: 0 }),
  by_day: list(closed({ day: text('The UTC day.'), channel: text(), credits: integer() })),
});

/** The balance and the credits billed per UTC day and ledger line over the last `days` days. */
export function usageReport(balance: number, days: number, rows: { day: string; line: string; credits: number }[]): Static<typeof UsageReport> {
  return {
    object: 'usage',
    balance,
    days,
    total_credits: rows.reduce((sum, r) => sum + r.credits, 0),
    by_day: rows.map((r) => ({ day: r.day, channel: r.line, credits: r.credits })),
  };
}
