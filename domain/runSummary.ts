import { RUN_STATUSES, type ErrorCode, type RunStatus } from './errors';
import { RUN_KINDS, type RunKind } from './runs';
import { boolean, closed, constant, integer, oneOfValues, orNull, publicId, ref, text, timestamp, type Static } from './shape';

/**
 * A run in a list: metadata only, never its exchange (its output is read one run at a time, GET
 * /api/v2/runs/{id}). Apart from domain/runs.ts, which the run workflow imports: the workflow bundle
 * takes neither TypeBox nor the ids' node:crypto.
 */
export interface RunSummaryView {
  public_id: string;
  status: RunStatus;
  kind: RunKind;
  agent: string;
  agent_version: number;
  error_code: string | null;
  total_tokens: number;
  queued_ms: number;
  reconciled: boolean;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
}

export const RunSummary = closed(
  {
    id: publicId('run'),
    object: constant('run.summary'),
    status: oneOfValues(RUN_STATUSES),
    kind: oneOfValues(RUN_KINDS),
    agent: text(),
    agent_version: integer(),
    error_code: orNull(ref<ErrorCode>('ErrorCode')),
    total_tokens: integer({ minimum: 0 }),
    queued_ms: integer({ minimum: 0, description: 'How long it waited in the queue: until it started, or (never started) until it ended, or until now.' }),
    reconciled: boolean('Settled by the reconciler: its workflow ended without settling it.'),
    created_at: timestamp(),
    started_at: orNull(timestamp()),
    completed_at: orNull(timestamp()),
  },
  'A run in a list: metadata only, never its exchange (read one run for its output).',
);

export function runSummary(r: RunSummaryView): Static<typeof RunSummary> {
  return {
    id: r.public_id,
    object: 'run.summary',
    status: r.status,
    kind: r.kind,
    agent: r.agent,
    agent_version: r.agent_version,
    error_code: r.error_code as ErrorCode | null,
    total_tokens: r.total_tokens,
    queued_ms: r.queued_ms,
    reconciled: r.reconciled,
    created_at: r.created_at.toISOString(),
    started_at: r.started_at?.toISOString() ?? null,
    completed_at: r.completed_at?.toISOString() ?? null,
  };
}
