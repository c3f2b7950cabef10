import { defaultPayloadConverter, RawValue } from '@temporalio/common';
import type { RunInput } from '../domain/runs';
import { UNSEALED_METADATA_KEY } from '../domain/unsealed';


/**
 * A value Temporal keeps as it is, readable without the codec: the UI's text (a workflow's summary
 * and details, an activity's summary) and a Schedule's arguments (ids only). The SDK passes a
 * RawValue's payload through untouched, so it reaches the codec marked; typed as the value the SDK's
 * options expect.
 */
export function unsealed<T>(value: T): T {
  const payload = defaultPayloadConverter.toPayload(value);
  payload.metadata = { ...payload.metadata, [UNSEALED_METADATA_KEY]: new TextEncoder().encode('1') };
  return RawValue.fromPayload(payload) as unknown as T;
}

/**
 * What the Temporal UI shows of each workflow this service starts, in its list and on its page
 * (user metadata: a static summary and static details). Ids, kinds, versions and names only, never
 * content: unlike payloads, these fields are not sealed. No Node imports: workflows start children with them.
 */
export interface Described {
  staticSummary: string;
  staticDetails: string;
}

function described(summary: (string | undefined)[], details: Record<string, string | number | undefined>): Described {
  return {
    staticSummary: unsealed(summary.filter(Boolean).join(' · ')),
    staticDetails: unsealed(
      Object.entries(details)
        .filter(([, value]) => value !== undefined && value !== '')
        .map(([key, value]) => `${key}: ${value}`)
        .join('\n'),
    ),
  };
}

interface Correlation {
  requestId?: string;
  traceId?: string;
}

const correlation = (c: Correlation) => ({ request_id: c.requestId, trace_id: c.traceId });

/** `run · agent "helper" v3 · agent_run · ws_…`, its details the request and trace ids. */
export function runDescribed(input: RunInput): Described {
  const agent = input.agent.name ? `agent "${input.agent.name}" v${input.agent.version}` : `${input.agent.publicId} v${input.agent.version}`;
  return described(['run', agent, input.kind, input.workspace.publicId], { agent: input.agent.publicId, ...correlation(input), job: input.jobId, schedule: input.scheduleId });
}

/** A piece of background work of a workspace: `report · ws_…`, `job runs.batch · ws_…`, and so on. */
export function workDescribed(kind: string, workspace: string, c: Correlation & Record<string, string | undefined>): Described {
  const { requestId, traceId, ...more } = c;
  return described([kind, workspace], { ...more, ...correlation({ requestId, traceId }) });
}

/** The service's own work, not a workspace's: the dispatcher, the reconciler, a delivery, a recovery. */
export function serviceDescribed(summary: (string | undefined)[], details: Record<string, string | number | undefined> = {}): Described {
  return described(summary, details);
}
