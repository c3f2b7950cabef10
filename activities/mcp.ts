import { ApplicationFailure } from '@temporalio/activity';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError, type CallToolResult, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { MAX_ACTION_OUTPUT_CHARS } from '../domain/actions';
import type { McpToolConfig } from '../domain/agents';
import type { McpToolListing } from '../domain/mcpTools';
import type { Deadline } from '../domain/runs';
import { openSecretFor } from '../db/workspaceSecrets';
import { isHeaderValue } from '../domain/secrets';
import { callMcpTool as callRemote, listMcpTools, redacted, type McpRemote } from '../infra/mcpSessions';
import { AnswerTooLarge } from '../infra/cappedFetch';
import { TargetRefused } from '../infra/outboundTarget';
import { callSignal, deadlineFailure } from './bounded';
import { asToolCall } from './tools';
import { TOOL_REQUEST_TIMEOUT_MS } from '../domain/timings';

/**
 * Remote MCP servers' tools for a run (docs/api.md, "MCP servers as tools"). What crosses Temporal
 * is the server's config (its URL and the credential's name) and the call's arguments and result:
 * the credential's value is read here, from the workspace's sealed secrets, and never leaves the worker.
 */

/** The remote as this workspace reaches it: its URL, and the secret its config names as a bearer token. */
async function remoteOf(workspaceId: number, server: McpToolConfig): Promise<McpRemote> {
  if (!server.credential) return { workspaceId, url: server.server_url };
  const secret = await openSecretFor(workspaceId, server.credential, server.server_url);
  const refused = (why: string) => ApplicationFailure.create({ type: 'tool_execution_failed', message: `MCP server ${server.server_label}: ${why}`, nonRetryable: true });
  if (secret === undefined) throw refused(`the workspace has no secret named ${server.credential}`);
  if ('boundTo' in secret) throw refused(`the secret ${server.credential} is sent only to ${secret.boundTo}, not ${server.server_url}; set it again to send it elsewhere`);
  const token = secret.value;
  // Never sent, and never quoted: a header refuses it with the whole value in its error message.
  if (!isHeaderValue(token)) throw refused(`the secret ${server.credential} cannot be sent as a header (characters past Latin-1, or spaces at its ends); set it again`);
  return { workspaceId, url: server.server_url, token };
}

/** Progress events of one call: at most this many, and one at most every PROGRESS_EVERY_MS (the last always). */
const MAX_PROGRESS_EVENTS = 100;
const PROGRESS_EVERY_MS = 100;
/** A server's own words in an error (a refused request's body) are cut to this. */
const MAX_ERROR_CHARS = 500;

export interface McpDiscovery {
  workspaceId: number;
  deadline: Deadline;
  servers: McpToolConfig[];
}

/** Each server's listing, or why it could not be had: one server down leaves the others' tools offered. */
export type McpListings = ({ label: string; tools: McpToolListing[] } | { label: string; error: string })[];

/** tools/list of each of the run's servers, at once, each from this worker's copy while it is fresh. */
export async function discoverMcpTools(d: McpDiscovery): Promise<McpListings> {
  if (d.deadline.at <= Date.now()) throw deadlineFailure(d.deadline);
  const signal = callSignal(d.deadline);
  return Promise.all(
    d.servers.map(async (server) => {
      let remote: McpRemote | undefined;
      try {
        remote = await remoteOf(d.workspaceId, server);
        return { label: server.server_label, tools: await listMcpTools(remote, { signal, budgetMs: TOOL_REQUEST_TIMEOUT_MS }) };
      } catch (err) {
        return { label: server.server_label, error: `MCP server ${server.server_label} could not be reached: ${messageOf(err, remote?.token)}` };
      }
    }),
  );
}

export interface McpInvocation {
  runId: string;
  deadline: Deadline;
  workspaceId: number;
  callId: string;
  /** The name the model called: `<server_label>__<tool>`. */
  name: string;
  server: McpToolConfig;
  tool: string;
  arguments: string;
}

/**
 * One tools/call. The result's text goes to the model, other content named, not inlined; a result
 * with `isError` is the tool's own failure, which the model sees (and the stream, as
 * response.tool.failed). Progress the server reports is a response.tool.progress event. A server that
 * cannot be reached, or fails the request, fails the call: retried by the policy beside the
 * workflow, as an HTTP tool's; a refused target is final.
 */
export function callMcpTool(call: McpInvocation): Promise<string> {
  let remote: McpRemote | undefined;
  const failure = (err: unknown) => ({ message: messageOf(err, remote?.token), final: final(err) });
  return asToolCall(call, failure, async ({ signal, events, event }) => {
    // A chatty server's progress is thinned: a run's stream holds its events whole, from response.started on.
    let told = 0;
    let toldAt = 0;
    const progress = (p: Progress) => {
      const last = p.total !== undefined && p.progress >= p.total;
      if (!last && (told >= MAX_PROGRESS_EVENTS || Date.now() - toldAt < PROGRESS_EVERY_MS)) return;
      told += 1;
      toldAt = Date.now();
      events.emit('response.tool.progress', { ...event, progress: p.progress, ...(p.total !== undefined && { total: p.total }), ...(p.message && { message: p.message.slice(0, 200) }) });
    };
    const args = argumentsOf(call);
    remote = await remoteOf(call.workspaceId, call.server);
    const result = await callRemote(remote, call.tool, args, { signal, budgetMs: TOOL_REQUEST_TIMEOUT_MS, onProgress: progress });
    // As much of it as of an HTTP tool's answer or a client tool's output.
    const text = resultText(result).slice(0, MAX_ACTION_OUTPUT_CHARS);
    if (result.isError) {
      events.emit('response.tool.failed', { ...event, error: text.slice(0, 500) });
      return `The tool reported an error: ${text}`;
    }
    events.emit('response.tool.completed', event);
    return text;
  });
}

function argumentsOf(call: McpInvocation): Record<string, unknown> {
  let args: unknown;
  try {
    args = JSON.parse(call.arguments || '{}');
  } catch {
    args = undefined;
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    throw ApplicationFailure.create({ type: 'tool_execution_failed', message: `tool ${call.name}: the arguments are not a JSON object`, nonRetryable: true });
  }
  return args as Record<string, unknown>;
}

/** A result's content as the model reads it: text as it is, anything else by what it is. */
function resultText(result: CallToolResult): string {
  return result.content
    .map((part) => {
      if (part.type === 'text') return part.text;
      if (part.type === 'image' || part.type === 'audio') return `[${part.type}: ${part.mimeType}, not shown]`;
      if (part.type === 'resource_link') return `[resource link: ${part.uri}${part.name ? ` (${part.name})` : ''}]`;
      if (part.type === 'resource') return `[resource: ${part.resource.uri}]`;
      return `[${(part as { type: string }).type} content, not shown]`;
    })
    .join('\n');
}

/**
 * Whether trying again cannot help: a refused target (also when the connection's lookup refused it,
 * which fetch wraps), a server cut off for sending past a cap (it would send as much again), the
 * server's refusal of the request (a 4xx: its scopes, its rules), or its JSON-RPC error for the
 * request itself (an unknown tool, bad arguments), unlike a timeout or a lost connection.
 */
function final(err: unknown): boolean {
  if (err instanceof TargetRefused || (err as { cause?: unknown }).cause instanceof TargetRefused || err instanceof AnswerTooLarge) return true;
  // A redirect elsewhere is never followed; 408 and 429 say to try again later.
  if (err instanceof StreamableHTTPError) return (err.code ?? 0) >= 300 && (err.code ?? 0) < 500 && err.code !== 408 && err.code !== 429;
  return err instanceof McpError && err.code !== ErrorCode.RequestTimeout && err.code !== ErrorCode.ConnectionClosed && err.code !== ErrorCode.InternalError;
}

/** An error as a run may show it: the credential never in it, the server's own words cut short. */
function messageOf(err: unknown, token: string | undefined): string {
  const cause = (err as { cause?: { code?: string } }).cause?.code;
  return redacted(`${(err as Error).message ?? String(err)}${cause ? ` (${cause})` : ''}`, token).slice(0, MAX_ERROR_CHARS);
}
