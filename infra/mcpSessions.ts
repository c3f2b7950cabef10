import { createHash } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ErrorCode, McpError, ToolListChangedNotificationSchema, type CallToolResult, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { LRUCache } from 'lru-cache';
import type { McpToolListing } from '../domain/mcpTools';
import { logger } from './logger';
import { targetFetch } from './outboundTarget';

/**
 * This worker's sessions with remote MCP servers (docs/api.md, "MCP servers as tools"): one per
 * server and credential, opened on first use with the SDK's Streamable HTTP client, and kept; a
 * session the server no longer knows (restarted, expired) is opened again once, transparently. Each
 * server's tool listing is kept for MCP_LIST_TTL_MS, and dropped at once when the server says its
 * list changed.
 */

export interface McpRemote {
  url: string;
  /** The workspace secret's value, sent as a bearer token; held only in this process's memory. */
  token?: string;
}

/** How long a server's tools/list answer is used before it is asked again. */
export const MCP_LIST_TTL_MS = 60_000;
/** Sessions kept per worker; the least recently used is closed past this. */
const MAX_SESSIONS = 256;
/** Opening a session (initialize) gives up after this. */
const CONNECT_TIMEOUT_MS = 10_000;

const CLIENT_INFO = { name: 'agent-execution-service', version: '1' };

// The token is part of the key only as its hash: two credentials never share a session.
const keyOf = (remote: McpRemote) => createHash('sha256').update(`${remote.url}\n${remote.token ?? ''}`).digest('hex');

/** Ends a session: the server is told (a DELETE), so it need not keep it until it expires. */
async function end(session: Promise<Client>): Promise<void> {
  try {
    const client = await session;
    await (client.transport as StreamableHTTPClientTransport | undefined)?.terminateSession().catch(() => undefined);
    await client.close();
  } catch {
    // Never opened, or already gone: nothing to end.
  }
}

/** Sessions being ended, so a worker's shutdown waits for them. */
const ending = new Set<Promise<void>>();
const sessions = new LRUCache<string, Promise<Client>>({
  max: MAX_SESSIONS,
  dispose: (session) => {
    const ended = end(session);
    ending.add(ended);
    void ended.finally(() => ending.delete(ended));
  },
});
const listings = new LRUCache<string, McpToolListing[]>({ max: MAX_SESSIONS, ttl: MCP_LIST_TTL_MS });

async function open(remote: McpRemote, key: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(remote.url), {
    fetch: targetFetch(),
    ...(remote.token && { requestInit: { headers: { authorization: `Bearer ${remote.token}` } } }),
  });
  const client = new Client(CLIENT_INFO, { capabilities: {} });
  client.setNotificationHandler(ToolListChangedNotificationSchema, async () => void listings.delete(key));
  // The transport's own reconnects report here; a call that fails says so to its caller.
  client.onerror = (err) => logger.debug({ err: String(err), server: remote.url }, 'mcp session error');
  await client.connect(transport, { timeout: CONNECT_TIMEOUT_MS });
  return client;
}

function session(remote: McpRemote, key: string): Promise<Client> {
  let opening = sessions.get(key);
  if (!opening) {
    opening = open(remote, key);
    sessions.set(key, opening);
    // A session that could not be opened is not kept: the next call tries again.
    opening.catch(() => sessions.get(key) === opening && sessions.delete(key));
  }
  return opening;
}

/** The server no longer knows the session: 404 as the protocol says, or the 400 some servers answer instead. */
function sessionGone(err: unknown): boolean {
  return err instanceof StreamableHTTPError && (err.code === 404 || (err.code === 400 && /session/i.test(err.message)));
}

/** The server could not be reached, or the session's connection broke: the session is not used again. */
function sessionBroken(err: unknown): boolean {
  return err instanceof TypeError || (err instanceof McpError && err.code === ErrorCode.ConnectionClosed);
}

async function withSession<T>(remote: McpRemote, use: (client: Client) => Promise<T>): Promise<T> {
  const key = keyOf(remote);
  const first = session(remote, key);
  try {
    return await use(await first);
  } catch (err) {
    // A refusal of one request (a 403, a tool's own error) leaves the session to the calls sharing it.
    const gone = sessionGone(err);
    if ((gone || sessionBroken(err)) && sessions.get(key) === first) sessions.delete(key);
    if (!gone) throw err;
    // Forgotten by the server (restarted, expired): opened again at once, unseen by the caller.
    return use(await session(remote, key));
  }
}

/** The server's tools (every page of tools/list), from this worker's copy while it is fresh. */
export async function listMcpTools(remote: McpRemote, o: { signal?: AbortSignal; timeoutMs: number }): Promise<McpToolListing[]> {
  const key = keyOf(remote);
  const kept = listings.get(key);
  // A kept listing spares the list, not the check that the server answers now (a ping on the open session).
  if (kept) return withSession(remote, (client) => client.ping({ signal: o.signal, timeout: o.timeoutMs })).then(() => kept);
  const tools = await withSession(remote, async (client) => {
    const all: McpToolListing[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined, { signal: o.signal, timeout: o.timeoutMs });
      all.push(...page.tools.map((t) => ({ name: t.name, ...(t.description && { description: t.description }), inputSchema: t.inputSchema as Record<string, unknown> })));
      cursor = page.nextCursor;
    } while (cursor);
    return all;
  });
  listings.set(key, tools);
  return tools;
}

/** One tools/call; progress the server reports is handed on as it comes. */
export function callMcpTool(remote: McpRemote, name: string, args: Record<string, unknown>, o: { signal?: AbortSignal; timeoutMs: number; onProgress?: (p: Progress) => void }): Promise<CallToolResult> {
  return withSession(remote, async (client) => {
    const result = await client.callTool({ name, arguments: args }, CallToolResultSchema, {
      signal: o.signal,
      timeout: o.timeoutMs,
      maxTotalTimeout: o.timeoutMs,
      ...(o.onProgress && { onprogress: o.onProgress, resetTimeoutOnProgress: true }),
    });
    return result as CallToolResult;
  });
}

/** Closes every session (a worker shutting down, a test's end). */
export async function closeMcpSessions(): Promise<void> {
  sessions.clear();
  listings.clear();
  await Promise.all([...ending]);
}
