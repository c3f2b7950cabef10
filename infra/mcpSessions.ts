import { createHash } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ErrorCode, McpError, ToolListChangedNotificationSchema, type CallToolResult, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { LRUCache } from 'lru-cache';
import type { McpToolListing } from '../domain/mcpTools';
import { MAX_TOOL_ANSWER_BYTES } from '../domain/tools';
import { AnswerTooLarge, cappedFetch, type AnswerCaps } from './cappedFetch';
import { logger } from './logger';
import { targetFetch } from './outboundTarget';

/**
 * This worker's sessions with remote MCP servers (docs/api.md, "MCP servers as tools"): one per
 * workspace, server and credential, opened on first use with the SDK's Streamable HTTP client, and
 * kept; a session the server no longer knows (restarted, expired) is opened again once,
 * transparently. Each session's tool listing is kept for MCP_LIST_TTL_MS, and dropped at once when
 * the server says its list changed. Every operation has one time budget, opening the session included.
 *
 * A server is a tenant's, and so is what it sends: every byte of it is counted (cappedFetch), one
 * answer to a tools/call within the HTTP tools' cap, any other answer (a listing) within
 * MCP_MAX_LISTING_BYTES, and a listing within MCP_MAX_TOOLS tools. A server past a cap, or an
 * operation past its budget, has its session closed at once, which aborts every request, body and
 * stream of it: no read outlives its budget, and the worker's memory stays bounded whatever is sent.
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
/** Bytes of any answer but a tools/call's (initialize, a tools/list page, the notification stream), and of a whole listing. */
export const MCP_MAX_LISTING_BYTES = 1024 * 1024;
/** Tools of one server's listing: past it the server is cut off, as past a byte cap. */
export const MCP_MAX_TOOLS = 512;
/** Listings kept by this worker, in bytes (each at most MCP_MAX_LISTING_BYTES). */
const MAX_KEPT_LISTING_BYTES = 32 * 1024 * 1024;
/** A session's end (its DELETE) is waited for at most this at a worker's shutdown. */
const END_TIMEOUT_MS = 2_000;

const CLIENT_INFO = { name: 'agent-execution-service', version: '1' };

/** One open session: the client, and how many operations use it now (an evicted one is ended once idle). */
interface Session {
  transport: StreamableHTTPClientTransport;
  client: Promise<Client>;
  users: number;
  evicted: boolean;
  /** Why it was closed under its users (a cap passed, a budget spent): what their calls fail with. */
  cutOff?: Error;
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
const listings = new LRUCache<string, McpToolListing[]>({ max: MAX_SESSIONS, ttl: MCP_LIST_TTL_MS, maxSize: MAX_KEPT_LISTING_BYTES });
/** list_changed notices by key, whichever session heard them: a listing read across one is not kept. */
const changes = new LRUCache<string, number>({ max: MAX_SESSIONS * 4 });

/**
 * Closes a session under whoever uses it, without a word to the server (a DELETE could hang as well):
 * its transport's abort aborts every request and body read of it, and its pending requests fail.
 */
function cutOff(key: string, session: Session, why: Error): void {
  if (session.cutOff) return;
  session.cutOff = why;
  if (sessions.get(key) === session) sessions.delete(key);
  void session.transport.close().catch(() => undefined);
}

/** The caps of one request's answer, by what it asks: a tools/call's result is a tool's answer. */
function capsOf(init: RequestInit | undefined): AnswerCaps {
  const calls = typeof init?.body === 'string' && /"method"\s*:\s*"tools\/call"/.test(init.body);
  // A tools/call's stream may carry progress notifications before its result, each a message of its own.
  return { messageBytes: calls ? MAX_TOOL_ANSWER_BYTES : MCP_MAX_LISTING_BYTES, streamBytes: MCP_MAX_LISTING_BYTES };
}

async function open(remote: McpRemote, key: string, timeoutMs: number, transport: StreamableHTTPClientTransport): Promise<Client> {
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
    const transport = new StreamableHTTPClientTransport(new URL(remote.url), {
      fetch: cappedFetch(targetFetch(), capsOf, (err) => cutOff(key, created, err)),
      ...(remote.token && { requestInit: { headers: { authorization: `Bearer ${remote.token}` } } }),
    });
    const created: Session = { transport, client: open(remote, key, timeoutMs, transport), users: 0, evicted: false };
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
    // An aborted request leaves its fetch reading on: only closing the session stops that.
    const drop = () => cutOff(key, session, controller.signal.reason instanceof Error ? controller.signal.reason : new Error('the operation was aborted'));
    if (controller.signal.aborted) drop();
    controller.signal.addEventListener('abort', drop, { once: true });
    try {
      const client = await session.client;
      try {
        return { ok: true, value: await use(client, call) };
      } catch (err) {
        if (err instanceof AnswerTooLarge) cutOff(key, session, err);
        // The session's own end says why better than the SDK's "connection closed".
        return { ok: false, err: session.cutOff ?? err, client };
      }
    } catch (err) {
      throw session.cutOff ?? err;
    } finally {
      controller.signal.removeEventListener('abort', drop);
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
  const { tools, bytes } = await withSession(remote, o, async (client, call) => {
    const all: McpToolListing[] = [];
    let size = 0;
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const listed = await client.listTools(cursor ? { cursor } : undefined, call());
      const tools = listed.tools.map((t) => ({ name: t.name, ...(t.description && { description: t.description }), inputSchema: t.inputSchema as Record<string, unknown> }));
      all.push(...tools);
      size += JSON.stringify(tools).length;
      // Each page is within the byte cap; pages added up must be too, as a kept listing is.
      if (all.length > MCP_MAX_TOOLS) throw new AnswerTooLarge(`the server listed more than ${MCP_MAX_TOOLS} tools`);
      if (size > MCP_MAX_LISTING_BYTES) throw new AnswerTooLarge(`the server's listing passed ${MCP_MAX_LISTING_BYTES} bytes`);
      cursor = listed.nextCursor;
      if (!cursor) break;
    }
    return { tools: all, bytes: size };
  });
  // Not kept if the list changed while it was read: the next run asks again.
  if ((changes.get(key) ?? 0) === before) listings.set(key, tools, { size: Math.max(1, bytes) });
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
