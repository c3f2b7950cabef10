import { invalidRequest } from '../../domain/errors';
import { hasPrefix } from '../../domain/ids';
import type { ActionAnswer } from '../../domain/actions';
import { MCP_LABEL, MCP_NAME_SEPARATOR } from '../../domain/mcpTools';
import type { RunResponse } from '../../domain/runs';

/**
 * A run's calls that wait for an approver, as the Responses API shows MCP approvals: one
 * `mcp_approval_request` item each, for MCP and HTTP tools alike, answered by an
 * `mcp_approval_response` item in a request that continues the response (`previous_response_id`).
 */
export interface ApprovalRequestItem {
  type: 'mcp_approval_request';
  id: string;
  name: string;
  arguments: string;
  server_label: string;
}

/** OpenAI's prefix of an approval request's id. */
const PREFIX = 'mcpr_';
const SHA256 = /^[0-9a-f]{64}$/;

/**
 * The id names the run, the call and the hash of the arguments shown, so approving it approves
 * exactly those arguments (as /api/v2's `arguments_sha256` does), and nothing needs keeping.
 */
const idOf = (runId: string, callId: string, sha256: string | undefined) => `${PREFIX}${runId}.${callId}${sha256 ? `.${sha256}` : ''}`;

/**
 * The tool as OpenAI names an MCP call: an MCP server's tool by its label and its own name (the
 * model's `<server_label>__<tool>` split at its first `__`: a label has none and does not end in `_`);
 * an HTTP tool by its name, its label the agent's id (the agent is the server that runs it).
 */
function toolOf(run: RunResponse, tool: string): { name: string; server_label: string } {
  const at = tool.indexOf(MCP_NAME_SEPARATOR);
  const label = at > 0 ? tool.slice(0, at) : '';
  if (MCP_LABEL.test(label) && at + MCP_NAME_SEPARATOR.length < tool.length) return { name: tool.slice(at + MCP_NAME_SEPARATOR.length), server_label: label };
  return { name: tool, server_label: run.agent };
}

/** The approvals the run waits on, as `mcp_approval_request` items. */
export function approvalRequestsOf(run: RunResponse): ApprovalRequestItem[] {
  return (run.required_action?.calls ?? []).flatMap((c) =>
    c.type === 'approval' ? [{ type: 'mcp_approval_request' as const, id: idOf(run.id, c.call_id, c.arguments_sha256), ...toolOf(run, c.tool), arguments: c.arguments ?? '{}' }] : [],
  );
}

/** An `mcp_approval_response` as the decision it brings on the call its request id names (of run `runId`). */
export function approvalAnswerOf(item: { approval_request_id?: string; approve?: boolean; reason?: string | null }, where: string): { runId: string; answer: ActionAnswer } {
  const id = item.approval_request_id ?? '';
  // run.call[.sha256]: a run id has no dot; the call's id is what lies between.
  const [runId, ...parts] = id.startsWith(PREFIX) ? id.slice(PREFIX.length).split('.') : [''];
  const sha256 = parts.length > 1 && SHA256.test(parts.at(-1)!) ? parts.pop() : undefined;
  const callId = parts.join('.');
  if (!hasPrefix('run', runId) || !callId) throw invalidRequest(`${where}.approval_request_id must be the id of an mcp_approval_request this service gave out.`, 'input');
  if (typeof item.approve !== 'boolean') throw invalidRequest(`${where}.approve must be true or false.`, 'input');
  const answer: ActionAnswer = item.approve
    ? { call_id: callId, decision: 'approve', ...(sha256 && { arguments_sha256: sha256 }) }
    : { call_id: callId, decision: 'deny', ...(item.reason && { reason: item.reason }) };
  return { runId, answer };
}
