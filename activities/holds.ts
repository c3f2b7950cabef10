import { raiseHold } from '../db/creditReservations';

/**
 * A tool round's results may cost later calls more than the run's hold counted (domain/billing.ts,
 * toolRoundExcess): the hold is raised by that much from the workspace's balance, so the run is
 * charged all it consumes. False when the balance cannot cover it: the run cuts the results instead.
 */
export async function holdForToolResults(h: { runId: string; credits: number }): Promise<boolean> {
  return raiseHold(h.runId, h.credits);
}
