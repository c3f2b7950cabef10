import { createHmac } from 'node:crypto';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { HttpToolConfig } from '../domain/agents';
import { MAX_TOOL_ANSWER_BYTES } from '../domain/tools';
import { config } from '../infra/config';
import { postToTarget, TargetRefused } from '../infra/outboundTarget';
import type { Deadline } from '../domain/runs';
import type { StreamEventType } from '../domain/streamEvents';
import { callSignal, deadlineFailure } from './bounded';
import { RunEvents } from './runEvents';
import { TOOL_REQUEST_TIMEOUT_MS } from '../domain/timings';
import { tracedTool } from './toolSpan';

export interface ToolInvocation {
  runId: string;
  /** The tool request is stopped at the run's deadline, which then fails the run. */
  deadline: Deadline;
  workspacePublicId: string;
  callId: string;
  tool: HttpToolConfig;
  arguments: string;
}

/**
 * Each workspace's tool secret, derived rather than stored: a tool endpoint verifies
 * `X-Service-Signature` exactly as a webhook receiver does.
 */
export function toolSecret(workspacePublicId: string): string {
  return createHmac('sha256', config().signingSecret).update(`tool:${workspacePublicId}`).digest('hex');
}

/**
 * One HTTP tool call: POSTs the model's arguments, signed with the workspace's tool secret, and
 * returns the endpoint's answer for the model. Network failures and 5xx are retried by the policy
 * declared beside the workflow; a 4xx or a refused target is final.
 */
export function callTool(call: ToolInvocation): Promise<string> {
  const failure = (err: unknown) => ({ message: (err as Error).message, final: err instanceof TargetRefused });
  return asToolCall({ ...call, name: call.tool.name }, failure, async ({ signal, events, event }) => {
    const url = new URL(call.tool.url);
    const timestamp = Math.floor(Date.now() / 1000);
    const signature = createHmac('sha256', toolSecret(call.workspacePublicId)).update(`${timestamp}.${call.arguments}`).digest('hex');
    const answer = await postToTarget(url, call.arguments, {
      'content-type': 'application/json',
      'x-service-signature': `t=${timestamp},v1=${signature}`,
      'x-service-run-id': call.runId,
      'x-service-tool-call-id': call.callId,
    }, { timeoutMs: TOOL_REQUEST_TIMEOUT_MS, maxAnswerBytes: MAX_TOOL_ANSWER_BYTES, signal });
    if (answer.status >= 400) {
      throw ApplicationFailure.create({ message: `tool ${call.tool.name} answered ${answer.status}`, type: 'tool_execution_failed', nonRetryable: answer.status < 500 });
    }
    events.emit('response.tool.completed', event);
    return answer.text;
  });
}

/** What every service-run tool call names: its run, the model's call, the tool's name as the model called it, the run's deadline; its arguments and, for an MCP tool, its server, for its span. */
export interface ToolCallOf {
  runId: string;
  callId: string;
  name: string;
  deadline: Deadline;
  arguments?: string;
  server?: { server_label: string; server_url: string };
}

/**
 * One service-run tool call (an HTTP tool's, a remote MCP tool's) as its activity runs it: refused
 * past the run's deadline, response.tool.started at its first attempt, then `work`, which says how
 * it ended. What `work` throws is tool_execution_failed, final as `failure` says (retried by the
 * policy beside the workflow otherwise), unless the run's time ran out: then the deadline's failure.
 * Each attempt is an `execute_tool` span (activities/toolSpan.ts).
 */
export async function asToolCall(
  call: ToolCallOf,
  failure: (err: unknown) => { message: string; final: boolean },
  work: (o: { signal: AbortSignal; events: RunEvents; event: { id: string; call_id: string; tool: string } }) => Promise<string>,
): Promise<string> {
  const ctx = Context.current();
  if (call.deadline.at <= Date.now()) throw deadlineFailure(call.deadline);
  const events = new RunEvents(call.runId);
  const signal = callSignal(call.deadline);
  const event = { id: call.runId, call_id: call.callId, tool: call.name };
  if (ctx.info.attempt === 1) events.emit('response.tool.started', event);
  try {
    return await tracedTool(call, () => work({ signal, events, event }));
  } catch (err) {
    if (err instanceof ApplicationFailure) throw err;
    // The run's time is up: stopping the tool fails the run, whatever the tool policy.
    if (signal.aborted && !ctx.cancellationSignal.aborted) throw deadlineFailure(call.deadline);
    const { message, final } = failure(err);
    throw ApplicationFailure.create({ message: `tool ${call.name} failed: ${message}`, type: 'tool_execution_failed', nonRetryable: final });
  } finally {
    await events.flush();
  }
}

/** Appends one event to a run's stream, for events the workflow itself decides (a tool's final failure, a handoff). */
export async function emitRunEvent(runId: string, type: StreamEventType, data: unknown): Promise<void> {
  const events = new RunEvents(runId);
  events.emit(type, data);
  await events.flush();
}
