import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { freePort } from '../../workers/temporalDevServer';

/**
 * The MCP project's reference server (`@modelcontextprotocol/server-everything`, from npm) in its
 * Streamable HTTP mode, on a loopback port of its own: a real remote MCP server for an agent's tools.
 * It takes its port from PORT only; it is given no other environment (its `get-env` tool shows it).
 */
export interface EverythingServer {
  url: string;
  /** Stops it (its sessions with it); `start` brings it back on the same port, knowing none of them. */
  stop(): Promise<void>;
  start(): Promise<void>;
}

/** The reference server's entry point, run with `streamableHttp` and PORT (the bench starts it too). */
export const EVERYTHING_BIN = require.resolve('@modelcontextprotocol/server-everything/package.json').replace(/package\.json$/, 'dist/index.js');

export async function everythingServer(): Promise<EverythingServer> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = () =>
    new Promise<void>((resolve, reject) => {
      const started = spawn(process.execPath, [EVERYTHING_BIN, 'streamableHttp'], { env: { PORT: String(port), PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'ignore', 'pipe'] });
      child = started;
      let said = '';
      started.stderr!.on('data', (chunk: Buffer) => {
        said += chunk.toString();
        if (/listening on port/.test(said)) resolve();
        if (/Failed to start/.test(said)) reject(new Error(said));
      });
      started.once('exit', (code) => reject(new Error(`server-everything exited with ${code}: ${said}`)));
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      const running = child;
      if (!running || running.exitCode !== null || running.signalCode !== null) return resolve();
      running.once('exit', () => resolve());
      running.kill('SIGTERM');
    });
  await start();
  return { url: `http://127.0.0.1:${port}/mcp`, stop, start };
}

/**
 * A second real server, built with the SDK's own McpServer (stateful Streamable HTTP on a loopback
 * port): its tools can change while clients are connected, and each connected session is told
 * (`notifications/tools/list_changed`), which the reference server never does after initialization.
 */
export interface ChangingServer {
  url: string;
  /** The Authorization header of every request it was sent, in order. */
  authorizations: (string | undefined)[];
  /** Adds a tool answering its own name; every open session's client is told the list changed. */
  addTool(name: string): void;
  close(): Promise<void>;
}

export async function changingToolsServer(first: string): Promise<ChangingServer> {
  const tools = [first];
  const sessions = new Map<string, { server: McpServer; transport: StreamableHTTPServerTransport }>();
  const register = (server: McpServer, name: string) => server.registerTool(name, { description: `Answers "${name}".` }, async () => ({ content: [{ type: 'text', text: name }] }));
  const authorizations: (string | undefined)[] = [];
  const http = createServer(async (req, res) => {
    authorizations.push(req.headers.authorization);
    const id = req.headers['mcp-session-id'];
    const open = typeof id === 'string' ? sessions.get(id) : undefined;
    if (open) return open.transport.handleRequest(req, res);
    if (req.method !== 'POST') return void res.writeHead(400).end();
    const server = new McpServer({ name: 'changing', version: '1' });
    for (const name of tools) register(server, name);
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (sid) => void sessions.set(sid, { server, transport }) });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    authorizations,
    addTool(name) {
      tools.push(name);
      for (const { server } of sessions.values()) register(server, name);
    },
    async close() {
      await Promise.all([...sessions.values()].map(({ server }) => server.close()));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
