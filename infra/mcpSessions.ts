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
 * workspace, server and credential, opened on first use with the SDK's Streamable HTTP client, and
 * kept; a session the server no longer knows (restarted, expired) is opened again once,
 * transparently. Each session's tool listing is kept for MCP_LIST_TTL_MS, and dropped at once when
 * the server says its list changed. Every operation has one time budget, opening the session included.
 */

export interface McpRemote {
  /** Sessions are never shared across workspaces, whatever state a server keeps in one. */
  workspaceId: number;
  url: string;
  /** The workspace secret's value, sent as a bearer token; held only in this process's memory. */
  token?: string;
}

/** How long a server's tools/list answer is used before it is asked again. */
export const MCP_LIST_TTL_MS = 60_000;
/** Sessions kept per worker; past this the least recently used is ended once no call uses it. */
const MAX_SESSIONS = 256;
/** tools/list pages read at most: a server that pages on and on is not listed whole. */
const MAX_LIST_PAGES = 20;
/** A session's end (its DELETE) is waited for at most this at a worker's shutdown. */
const END_TIMEOUT_MS = 2_000;

const CLIENT_INFO = { name: 'agent-execution-service', version: '1' };

/** One open session: the client, and how many operations use it now (an evicted one is ended once idle). */
interface Session {
  client: Promise<Client>;
  users: number;
  evicted: boolean;
}

// The token is part of the key only as its hash: two credentials never share a session.
const keyOf = (remote: McpRemote) => createHash('sha256').update(`${remote.workspaceId}\n${remote.url}\n${remote.token ?? ''}`).digest('hex');

/** Ends a session: the server is told (a DELETE), so it need not keep it until it expires. */
async function end(session: Session): Promise<void> {
  try {
    const client = await session.client;
    await (client.transport as StreamableHTTPClientTransport | undefined)?.terminateSession().catch(() => undefined);
    await client.close();
  } catch {
    // Never opened, or already gone: nothing to end.
  }
}

/** Sessions being ended, so a worker's shutdown waits for them (a little). */
const ending = new Set<Promise<void>>();
function retire(session: Session): void {
  session.evicted = true;
  if (session.users > 0) return;
  const ended = end(session);
  ending.add(ended);
  void ended.finally(() => ending.delete(ended));
}

const sessions = new LRUCache<string, Session>({ max: MAX_SESSIONS, dispose: retire });
const listings = new LRUCache<string, McpToolListing[]>({ max: MAX_SESSIONS, ttl: MCP_LIST_TTL_MS });
/** list_changed notices by key, whichever session heard them: a listing read across one is not kept. */
const changes = new LRUCache<string, number>({ max: MAX_SESSIONS * 4 });

async function open(remote: McpRemote, key: string, timeoutMs: number): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(remote.url), {
    fetch: targetFetch(),
    ...(remote.token && { requestInit: { headers: { authorization: `Bearer ${remote.token}` } } }),
  });
  const client = new Client(CLIENT_INFO, { capabilities: {} });
  client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
    listings.delete(key);
    changes.set(key, (changes.get(key) ?? 0) + 1);
  });
  // The transport's own reconnects report here; a call that fails says so to its caller.
  client.onerror = (err) => logger.debug({ err: redacted(String(err), remote.token), server: remote.url }, 'mcp session error');
  await client.connect(transport, { timeout: timeoutMs });
  return client;
}

function sessionFor(remote: McpRemote, key: string, timeoutMs: number): Session {
  let session = sessions.get(key);
  if (!session) {
    const created: Session = { client: open(remote, key, timeoutMs), users: 0, evicted: false };
    // A session that could not be opened is not kept: the next call tries again.
    created.client.catch(() => sessions.get(key) === created && sessions.delete(key));
    sessions.set(key, created);
    session = created;
  }
  return session;
}

/** The server no longer knows the session it was sent: 404 as the protocol says, or the 400 some servers answer instead. */
function sessionGone(err: unknown, client: Client): boolean {
  if (!(err instanceof StreamableHTTPError)) return false;
  const sent = (client.transport as StreamableHTTPClientTransport | undefined)?.sessionId !== undefined;
  return sent && (err.code === 404 || (err.code === 400 && /session/i.test(err.message)));
}

/** The server could not be reached, or the session's connection broke: the session is not used again. */
function sessionBroken(err: unknown): boolean {
  return err instanceof TypeError || (err instanceof McpError && err.code === ErrorCode.ConnectionClosed);
}

/**
 * Runs `use` on the remote's session, within `budgetMs` in all (opening the session included: then
 * its requests are aborted), with a signal of its own that follows `signal`: the SDK keeps its
 * listener on the signal it is given. `call()` gives each request what is left of the budget.
 */
async function withSession<T>(remote: McpRemote, o: { signal?: AbortSignal; budgetMs: number }, use: (client: Client, call: () => { signal: AbortSignal; timeout: number }) => Promise<T>): Promise<T> {
  const key = keyOf(remote);
  const until = Date.now() + o.budgetMs;
  const left = () => Math.max(1, until - Date.now());
  const controller = new AbortController();
  const stop = () => controller.abort(o.signal?.reason);
  if (o.signal?.aborted) stop();
  o.signal?.addEventListener('abort', stop, { once: true });
  const spent = setTimeout(() => controller.abort(new Error(`no answer within ${o.budgetMs} ms`)), o.budgetMs);
  const call = () => ({ signal: controller.signal, timeout: left() });
  const attempt = async (session: Session): Promise<{ ok: true; value: T } | { ok: false; err: unknown; client: Client }> => {
    session.users += 1;
    try {
      const client = await session.client;
      try {
        return { ok: true, value: await use(client, call) };
      } catch (err) {
        return { ok: false, err, client };
      }
    } finally {
      session.users -= 1;
      if (session.evicted && session.users === 0) retire(session);
    }
  };
  try {
    const first = sessionFor(remote, key, left());
    const tried = await attempt(first);
    if (tried.ok) return tried.value;
    // A refusal of one request (a 403, a tool's own error) leaves the session to the calls sharing it.
    const gone = sessionGone(tried.err, tried.client);
    if ((gone || sessionBroken(tried.err)) && sessions.get(key) === first) sessions.delete(key);
    if (!gone) throw tried.err;
    // Forgotten by the server (restarted, expired): opened again at once, unseen by the caller.
    const again = await attempt(sessionFor(remote, key, left()));
    if (again.ok) return again.value;
    throw again.err;
  } finally {
    clearTimeout(spent);
    o.signal?.removeEventListener('abort', stop);
  }
}

/** The server's tools (tools/list, up to MAX_LIST_PAGES pages), from this worker's copy while it is fresh. */
export async function listMcpTools(remote: McpRemote, o: { signal?: AbortSignal; budgetMs: number }): Promise<McpToolListing[]> {
  const key = keyOf(remote);
  const kept = listings.get(key);
  // A kept listing spares the list, not the check that the server answers now (a ping on the open session).
  if (kept) return withSession(remote, o, (client, call) => client.ping(call())).then(() => kept);
  const before = changes.get(key) ?? 0;
  const tools = await withSession(remote, o, async (client, call) => {
    const all: McpToolListing[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const listed = await client.listTools(cursor ? { cursor } : undefined, call());
      all.push(...listed.tools.map((t) => ({ name: t.name, ...(t.description && { description: t.description }), inputSchema: t.inputSchema as Record<string, unknown> })));
      cursor = listed.nextCursor;
      if (!cursor) break;
    }
    return all;
  });
  // Not kept if the list changed while it was read: the next run asks again.
  if ((changes.get(key) ?? 0) === before) listings.set(key, tools);
  return tools;
}

/** One tools/call; progress the server reports is handed on as it comes. */
export function callMcpTool(remote: McpRemote, name: string, args: Record<string, unknown>, o: { signal?: AbortSignal; budgetMs: number; onProgress?: (p: Progress) => void }): Promise<CallToolResult> {
  return withSession(remote, o, async (client, call) => {
    const request = call();
    const result = await client.callTool({ name, arguments: args }, CallToolResultSchema, { ...request, maxTotalTimeout: request.timeout, ...(o.onProgress && { onprogress: o.onProgress, resetTimeoutOnProgress: true }) });
    return result as CallToolResult;
  });
}

/** A text with the token, if it appears, replaced: errors quote what they could not send. */
export function redacted(text: string, token: string | undefined): string {
  return token ? text.split(token).join('[credential]') : text;
}

/** Ends every session (a worker shutting down, a test's end), waiting at most END_TIMEOUT_MS for the servers. */
export async function closeMcpSessions(): Promise<void> {
  for (const session of sessions.values()) session.users = 0;
  sessions.clear();
  listings.clear();
  changes.clear();
  await Promise.race([Promise.all([...ending]), new Promise((resolve) => setTimeout(resolve, END_TIMEOUT_MS).unref())]);
}
