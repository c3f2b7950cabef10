import type { RequestListener } from 'node:http';
import { ServiceError } from '../../domain/errors';
import { inject } from 'light-my-request';
import type { Principal } from '../../callers/principal';
import type { RunResponse } from '../../domain/runs';
import { insufficientScope } from './challenge';
import {
  eraOf,
  errorReply,
  HANDSHAKE_REVISIONS,
  hasClientCapabilities,
  JSONRPC,
  MODERN_REVISION,
  reply,
  revisionOf,
  SUPPORTED_REVISIONS,
  TransportError,
  unsupportedRevision,
  type Era,
  type JsonRpcRequest,
} from './protocol';
import { BadArgument, listedTools, TOOL_BY_NAME, type ApiAnswer, type ApiRequest } from './tools';

/** What the transport knows of the HTTP request a message came in. */
export interface Caller {
  principal: Principal;
  headers(name: string): string;
  /** Counts the request against the rate limits under this endpoint name (429 when one is out). */
  count(endpoint: string): Promise<void>;
  /** The API's own request handler: tool calls are requests to the HTTP endpoints, made in process. */
  api: RequestListener;
  clientAddress: string;
}

const SERVER_INFO = { name: 'agent-execution-service', title: 'Agent Execution Service', version: '2.0.0' };
const CAPABILITIES = { tools: { listChanged: false } };
const INSTRUCTIONS = 'Tools of the Agent Execution Service (preview set: names and schemas may change; list them when you connect). Each tool needs its own scope besides mcp:connect.';

/** The answer to one JSON-RPC request: the HTTP status, its headers and the JSON-RPC reply. */
export async function answer(m: JsonRpcRequest, c: Caller): Promise<{ status: number; headers: Record<string, string>; body: unknown }> {
  try {
    return { status: 200, headers: {}, body: reply(m.id, await result(m, c)) };
  } catch (err) {
    // A 429 before any tool (tools/list) still answers in JSON-RPC, which an MCP client reads.
    if (err instanceof ServiceError && err.code === 'rate_limited') {
      return { status: err.httpStatus, headers: err.headers, body: errorReply(m.id, new TransportError(err.httpStatus, JSONRPC.rateLimited, err.message, { retry_after: Number(err.headers['Retry-After']) })) };
    }
    if (!(err instanceof TransportError)) throw err;
    return { status: err.status, headers: {}, body: errorReply(m.id, err) };
  }
}

async function result(m: JsonRpcRequest, c: Caller): Promise<unknown> {
  const revision = revisionOf(c.headers('MCP-Protocol-Version'));
  const era = eraOf(revision);
  // The handshake answers in a revision it supports instead of failing; the header is checked on what follows.
  if (m.method === 'initialize' && era === 'handshake') return initialize(m.params);
  if (!SUPPORTED_REVISIONS.includes(revision)) throw unsupportedRevision(revision);
  if (era === 'modern') checkModern(m, c);
  switch (m.method) {
    case 'ping':
      return {};
    case 'server/discover':
      return { supportedVersions: SUPPORTED_REVISIONS, capabilities: CAPABILITIES, serverInfo: SERVER_INFO, instructions: INSTRUCTIONS };
    case 'tools/list':
      await c.count('mcp');
      return { tools: listedTools() };
    case 'tools/call':
      return callTool(m.params ?? {}, c, era);
    default:
      throw notFound(era, `Method not found: ${m.method}.`, JSONRPC.methodNotFound);
  }
}

function initialize(params: Record<string, unknown> | undefined) {
  const requested = params?.protocolVersion;
  const protocolVersion = (HANDSHAKE_REVISIONS as readonly unknown[]).includes(requested) ? requested : HANDSHAKE_REVISIONS[0];
  return { protocolVersion, capabilities: CAPABILITIES, serverInfo: SERVER_INFO, instructions: INSTRUCTIONS };
}

/** A modern request mirrors its method (and tool name) in headers, which must agree, and carries client capabilities. */
function checkModern(m: JsonRpcRequest, c: Caller): void {
  const method = c.headers('Mcp-Method');
  if (method !== '' && method !== m.method) throw new TransportError(400, JSONRPC.mirroredHeaderMismatch, `The Mcp-Method header (${method}) disagrees with the body's method (${m.method}).`);
  const name = c.headers('Mcp-Name');
  const bodyName = m.params?.name;
  if (name !== '' && name !== bodyName) throw new TransportError(400, JSONRPC.mirroredHeaderMismatch, `The Mcp-Name header (${name}) disagrees with the body's name (${String(bodyName)}).`);
  if (!hasClientCapabilities(m.params)) {
    throw new TransportError(400, JSONRPC.invalidParams, `A ${MODERN_REVISION} request carries its client capabilities: params._meta["io.modelcontextprotocol/clientCapabilities"].`);
  }
}

/** Unknown methods and tools: HTTP 404 for a modern client, 200 for a handshake client (the error is in the body). */
function notFound(era: Era, message: string, code: number): TransportError {
  return new TransportError(era === 'modern' ? 404 : 200, code, message);
}

async function callTool(params: Record<string, unknown>, c: Caller, era: Era) {
  const tool = typeof params.name === 'string' ? TOOL_BY_NAME.get(params.name) : undefined;
  if (!tool) throw notFound(era, `Unknown tool: ${String(params.name)}.`, JSONRPC.invalidParams);
  // Checked here, before the tool runs: a 403 names every scope the call needs, in one challenge.
  if (!c.principal.scopes.has(tool.scope)) throw insufficientScope(['mcp:connect', tool.scope], `The tool ${tool.name} needs the scope "${tool.scope}".`);
  const args = params.arguments ?? {};
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return toolError('arguments must be an object.');
  try {
    return toolResult(await tool.run(args as Record<string, unknown>, (request) => callApi(request, c)));
  } catch (err) {
    if (err instanceof BadArgument) return toolError(err.message);
    throw err;
  }
}

/** The HTTP endpoint, in process, as the caller: same credential, same client address, same counters. */
async function callApi(request: ApiRequest, c: Caller): Promise<ApiAnswer> {
  const query = Object.fromEntries(Object.entries(request.query ?? {}).filter((e): e is [string, string | number] => e[1] !== undefined).map(([k, v]) => [k, String(v)]));
  const headers: Record<string, string> = { authorization: c.headers('Authorization') };
  const traceparent = c.headers('traceparent');
  if (traceparent) headers.traceparent = traceparent;
  if (request.body !== undefined) headers['content-type'] = 'application/json';
  const res = await inject(c.api, {
    method: request.method,
    url: { pathname: request.path, query },
    headers,
    remoteAddress: c.clientAddress,
    payload: request.body === undefined ? undefined : JSON.stringify(request.body),
  });
  const contentType = String(res.headers['content-type'] ?? '');
  let body: unknown = res.payload;
  if (contentType.startsWith('application/json')) body = JSON.parse(res.payload);
  return { status: res.statusCode, headers: res.headers, body, contentType };
}

function toolError(text: string) {
  return { content: [{ type: 'text', text }], isError: true };
}

/**
 * A run that waits for people (a call needs approval, or is the client's to run) has no answer yet: the
 * tool result says so, and where the wait is answered (docs/api.md, "Actions").
 */
function waitsFor(a: ApiAnswer): string | undefined {
  const run = a.status === 202 ? (a.body as Partial<RunResponse> | undefined) : undefined;
  const action = run?.required_action;
  if (!action) return undefined;
  const calls = action.calls.map((c) => `${c.tool} (call ${c.call_id}: ${c.type === 'approval' ? 'needs an approval' : 'runs on the client'})`).join(', ');
  return `Run ${run.id} is waiting for people: ${calls}. Answer with POST ${action.submit_to} ({"call_id", "decision": "approve" | "deny"} or {"call_id", "output"}); then read the run with GET /api/v2/runs/${run.id}.`;
}

/** A success is the endpoint's JSON, as text and as structured content; a failure, readable text (isError). */
function toolResult(a: ApiAnswer) {
  const waits = waitsFor(a);
  if (waits) return toolError(waits);
  if (a.status < 400) {
    const structured = a.body !== null && typeof a.body === 'object' ? a.body : { value: a.body };
    return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured, isError: false };
  }
  const error = (a.body as { error?: { code?: string; message?: string } })?.error;
  let text = `${error?.message ?? `The API answered ${a.status}.`} (${error?.code ?? a.status})`;
  const retryAfter = a.headers['retry-after'];
  if (a.status === 429 && retryAfter !== undefined) text += ` Retry after ${String(retryAfter)} seconds.`;
  return toolError(text);
}
