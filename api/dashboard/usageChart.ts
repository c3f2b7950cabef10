/** Credits per day, stacked by channel: drawn on the server as SVG, so it renders without JavaScript. */

export interface DayLine {
  day: string;
  line: string;
  credits: number;
}

export interface UsageChart {
  width: number;
  height: number;
  days: { day: string; label: string | null; labelX: number; x: number; total: number; segments: { line: string; credits: number; y: number; height: number; color: string }[] }[];
  legend: { line: string; color: string; credits: number }[];
  max: number;
  barWidth: number;
}

// Colour-blind-safe (Okabe–Ito); channels beyond eight reuse them in order.
const PALETTE = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442', '#000000'];

const WIDTH = 720;
const HEIGHT = 220;
const PLOT_TOP = 10;
const PLOT_BOTTOM = 190;

/** Every day of the window (empty days drawn as gaps, not skipped), ending today (UTC). */
export function usageChart(rows: DayLine[], days: number, today = new Date()): UsageChart {
  const lines = [...new Set(rows.map((r) => r.line))].sort();
  const color = new Map(lines.map((line, i) => [line, PALETTE[i % PALETTE.length]]));
  const byDay = new Map<string, DayLine[]>();
  for (const row of rows) byDay.set(row.day, [...(byDay.get(row.day) ?? []), row]);
  const dayList = Array.from({ length: days }, (_, i) => new Date(today.getTime() - (days - 1 - i) * 86_400_000).toISOString().slice(0, 10));
  const totals = dayList.map((day) => (byDay.get(day) ?? []).reduce((sum, r) => sum + r.credits, 0));
  const max = Math.max(1, ...totals);
  const slot = WIDTH / days;
  const barWidth = Math.max(2, slot * 0.7);
  const scale = (PLOT_BOTTOM - PLOT_TOP) / max;
  return {
    width: WIDTH,
    height: HEIGHT,
    max,
    barWidth,
    days: dayList.map((day, i) => {
      let y = PLOT_BOTTOM;
      const segments = (byDay.get(day) ?? []).map((r) => {
        const height = r.credits * scale;
        y -= height;
        return { line: r.line, credits: r.credits, y, height, color: color.get(r.line)! };
      });
      const x = i * slot + (slot - barWidth) / 2;
      // A date under every fifth bar, counted back from today, kept inside the drawing.
      return { day, label: (days - 1 - i) % 5 === 0 ? day.slice(5) : null, labelX: Math.min(x + barWidth / 2, WIDTH - 16), x, total: totals[i], segments };
    }),
    legend: lines.map((line) => ({ line, color: color.get(line)!, credits: rows.filter((r) => r.line === line).reduce((sum, r) => sum + r.credits, 0) })),
  };
}
