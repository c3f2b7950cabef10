import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An MCP server as a hostile tenant would configure it: it opens a session as any server does, then
 * answers `tools/list` or `tools/call` with more than any client should read. Each behaviour is a path
 * (`<url>/<behaviour>/mcp`). It sends lazily, as fast as the client reads, until the client hangs up
 * or `limitBytes` is sent, and counts what it sent, so a test sees where the client cut it off.
 */
export const HOSTILE_BEHAVIOURS = ['endless-line', 'huge-listing', 'many-tools', 'endless-result', 'endless-result-line'] as const;
export type HostileBehaviour = (typeof HOSTILE_BEHAVIOURS)[number];

export interface HostileServer {
  url: string;
  /** Bytes sent in answers to tools/list and tools/call, by behaviour, and whether the client hung up first. */
  sent: Map<HostileBehaviour, { bytes: number; cutOff: boolean }>;
  close(): Promise<void>;
}

const LIMIT_BYTES = 300 * 1024 * 1024;
const CHUNK = Buffer.alloc(256 * 1024, 'x');

/** Writes `head`, then chunks of x, then `tail`, until `limit` bytes or the client hangs up: true if it hung up. */
function flood(res: ServerResponse, head: string, tail: string, o: { limit: number; everyMs?: number; onBytes: (n: number) => void }): Promise<boolean> {
  return new Promise((resolve) => {
    let sent = 0;
    let hungUp = false;
    res.on('close', () => {
      hungUp = !res.writableFinished;
      resolve(hungUp);
    });
    const write = (data: string | Buffer) => {
      sent += data.length;
      o.onBytes(data.length);
      return res.write(data);
    };
    write(head);
    const more = () => {
      if (hungUp || res.destroyed) return;
      if (sent >= o.limit) return void res.end(tail);
      const room = write(CHUNK);
      if (o.everyMs) setTimeout(more, o.everyMs);
      else if (room) setImmediate(more);
      else res.once('drain', more);
    };
    more();
  });
}

export async function hostileMcpServer(): Promise<HostileServer> {
  const sent = new Map<HostileBehaviour, { bytes: number; cutOff: boolean }>();
  const http = createServer((req, res) => {
    const behaviour = req.url?.split('/')[1] as HostileBehaviour;
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    // No notification stream: the client goes on without one.
    if (req.method !== 'POST') return void res.writeHead(405).end();
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const message = JSON.parse(body) as { id?: number; method: string; params?: { protocolVersion?: string } };
      const json = (result: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
      if (message.id === undefined) return void res.writeHead(202).end();
      if (message.method === 'initialize') return json({ protocolVersion: message.params?.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'hostile', version: '1' } });
      const tally = { bytes: 0, cutOff: false };
      sent.set(behaviour, tally);
      const counted = { limit: LIMIT_BYTES, onBytes: (n: number) => (tally.bytes += n) };
      const record = (hungUp: boolean) => void (tally.cutOff = hungUp);
      const open = `{"jsonrpc":"2.0","id":${message.id},"result":`;
      if (message.method === 'tools/list' && behaviour === 'endless-line') {
        // One SSE data line that never ends: 256 KiB every 20 ms.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        return void flood(res, `data: ${open}{"tools":[{"name":"`, '"}]}}\n\n', { ...counted, everyMs: 20 }).then(record);
      }
      if (message.method === 'tools/list' && behaviour === 'huge-listing') {
        // 300 MB of one JSON listing, as fast as it is read.
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(LIMIT_BYTES) });
        return void flood(res, `${open}{"tools":[{"name":"t","description":"`, '","inputSchema":{"type":"object"}}]}}', counted).then(record);
      }
      if (message.method === 'tools/list' && behaviour === 'many-tools') {
        const tools = Array.from({ length: 10_000 }, (_, i) => ({ name: `t${i}`, inputSchema: { type: 'object' } }));
        const answer = JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { tools } });
        tally.bytes = answer.length;
        res.on('close', () => record(!res.writableFinished));
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(answer);
      }
      if (message.method === 'tools/list') return json({ tools: [{ name: 'echo', inputSchema: { type: 'object' } }] });
      if (message.method === 'tools/call' && behaviour === 'endless-result') {
        // A result whose text never ends.
        res.writeHead(200, { 'content-type': 'application/json' });
        return void flood(res, `${open}{"content":[{"type":"text","text":"`, '"}]}}', counted).then(record);
      }
      if (message.method === 'tools/call' && behaviour === 'endless-result-line') {
        // The same as an event stream: one data line that never ends.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        return void flood(res, `data: ${open}{"content":[{"type":"text","text":"`, '"}]}}\n\n', counted).then(record);
      }
      return json({ content: [{ type: 'text', text: 'ok' }] });
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    sent,
    close: () =>
      new Promise((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}
