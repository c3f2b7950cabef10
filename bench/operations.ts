import { performance } from 'node:perf_hooks';
import type { Operation } from './load';
import type { Stack } from './stack';
import { timedFrames } from './sseFrames';
import { slowTag, tokenTag, toolTag } from './stubProvider';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/** GET through the whole API: authenticated, scoped, rate-limited, one indexed query. */
export const AUTH_GET_PATH = '/api/v2/logs?limit=1';

export async function expectOk(res: Response, what: string, status = 200): Promise<string> {
  const text = await res.text();
  if (res.status !== status) throw new Error(`${what} answered ${res.status}: ${text.slice(0, 300)}`);
  return text;
}

/** Reads an event stream to its end: the event types in order, and when the first text delta arrived. */
export async function readEvents(res: Response): Promise<{ events: string[]; firstDeltaAt?: number }> {
  const events: string[] = [];
  let firstDeltaAt: number | undefined;
  for await (const { event, at } of timedFrames(res)) {
    if (!event) continue;
    events.push(event);
    if (event === 'response.output_text.delta') firstDeltaAt ??= at;
  }
  return { events, firstDeltaAt };
}

/** The measured operations; each throws unless it got the success it expects. */
export function operations(s: Stack): Record<'floor' | 'run' | 'v1Chat' | 'mcpRun' | 'mcpDirect' | 'stream' | 'cancel' | 'authGet' | 'bareKoa', Operation> {
  let streamSeq = 0;
  let mcp: Promise<McpClient> | undefined;
  const respond = (input: string, stream: boolean) =>
    fetch(`${s.api}/api/v2/responses`, { method: 'POST', headers: s.auth, body: JSON.stringify({ agent: s.agent, input, ...(stream && { stream }) }) });
  return {
    async floor() {
      const res = await fetch(s.floor);
      if (res.status !== 204) throw new Error(`the floor answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
    },
    async run() {
      const status = (JSON.parse(await expectOk(await respond('Say hello.', false), 'POST /api/v2/responses')) as { status?: string }).status;
      if (status !== 'completed') throw new Error(`run ended ${status}`);
    },
    /** The same run as `run`, asked through the OpenAI-compatible surface: what its translation costs. */
    async v1Chat() {
      const res = await fetch(`${s.api}/v1/chat/completions`, { method: 'POST', headers: s.auth, body: JSON.stringify({ model: s.agent, messages: [{ role: 'user', content: 'Say hello.' }] }) });
      const finish = (JSON.parse(await expectOk(res, 'POST /v1/chat/completions')) as { choices?: { finish_reason?: string }[] }).choices?.[0]?.finish_reason;
      if (finish !== 'stop') throw new Error(`the chat completion finished ${finish}`);
    },
    /** A run whose model calls the MCP server's `echo` once, then answers: two model calls, the tools' listing (kept) and one tools/call. */
    async mcpRun() {
      const res = await fetch(`${s.api}/api/v2/responses`, { method: 'POST', headers: s.auth, body: JSON.stringify({ agent: s.mcpAgent, input: `Echo it. ${toolTag('everything__echo')}` }) });
      const status = (JSON.parse(await expectOk(res, 'POST /api/v2/responses (an MCP call)')) as { status?: string }).status;
      if (status !== 'completed') throw new Error(`the run with an MCP call ended ${status}`);
    },
    /** The same tools/call made straight to the server with the SDK's client, over one open session. */
    async mcpDirect() {
      mcp ??= (async () => {
        const client = new McpClient({ name: 'bench', version: '1' });
        await client.connect(new StreamableHTTPClientTransport(new URL(s.mcpServer)));
        return client;
      })();
      const result = await (await mcp).callTool({ name: 'echo', arguments: { message: 'bench' } });
      if (result.isError) throw new Error(`echo answered an error: ${JSON.stringify(result.content)}`);
    },
    /** One streamed run; returns its first-delta overhead: the client's first delta minus the stub's first chunk. */
    async stream() {
      const token = `s${++streamSeq}`;
      const res = await respond(`Say hello. ${tokenTag(token)}`, true);
      if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
        await expectOk(res, 'streamed POST /api/v2/responses');
        throw new Error('the streamed request was answered without an event stream');
      }
      const { events, firstDeltaAt } = await readEvents(res);
      const sentAt = s.stub.takeFirstChunkAt(token);
      if (events[0] !== 'response.started' || events.at(-1) !== 'response.completed' || firstDeltaAt === undefined || sentAt === undefined) {
        throw new Error(`unexpected stream: ${events.join(', ') || 'no events'}`);
      }
      return firstDeltaAt - sentAt;
    },
    /**
     * A streamed run cancelled with POST /runs/{id}/cancel at its first delta (the stub's reply would go
     * on for 20 s); returns how long the cancel took to answer, which it does once the run shows cancelled.
     */
    async cancel() {
      const res = await respond(`Go. ${slowTag(20, 1000)}`, true);
      let runId: string | undefined;
      let answeredMs: number | undefined;
      let last: string | undefined;
      for await (const { frame, event } of timedFrames(res)) {
        last = event ?? last;
        runId ??= /"id":"(run_[^"]+)"/.exec(frame)?.[1];
        if (answeredMs !== undefined || last !== 'response.output_text.delta') continue;
        const sent = performance.now();
        const answer = JSON.parse(await expectOk(await fetch(`${s.api}/api/v2/runs/${runId}/cancel`, { method: 'POST', headers: s.auth }), 'POST /api/v2/runs/{id}/cancel')) as { status?: string };
        answeredMs = performance.now() - sent;
        if (answer.status !== 'cancelled') throw new Error(`the cancel answered with the run ${answer.status}`);
      }
      if (answeredMs === undefined || last !== 'response.cancelled') throw new Error(`the stream ended with ${last ?? 'nothing'}, not a cancel`);
      return answeredMs;
    },
    async authGet() {
      await expectOk(await fetch(`${s.api}${AUTH_GET_PATH}`, { headers: s.auth }), `GET ${AUTH_GET_PATH}`);
    },
    async bareKoa() {
      await expectOk(await fetch(`${s.bareKoa}/ping`), 'bare Koa');
    },
  };
}
