import { reportSettlement, type ReportFormat } from '../domain/reports';
import type { RunOutcome } from '../domain/runs';
import { settleReportRecord, startReportRecord } from '../db/reports';

/** queued → running, as the report's run is started. */
export async function reportStarted(reportId: string): Promise<void> {
  await startReportRecord(reportId);
}

/** running → completed with the run's answer as the result, or → failed with the run's error. */
export async function reportSettled(s: { reportId: string; format: ReportFormat; outcome?: RunOutcome }): Promise<void> {
  await settleReportRecord(s.reportId, reportSettlement(s.format, s.outcome));
}
