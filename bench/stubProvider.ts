import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { LoopbackServer, readJson } from '../test/stack/loopbackServer';

/** The token the bench puts in a request's input, so a provider request can be matched to the client's. */
export const tokenTag = (token: string) => `[bench:${token}]`;
const TOKEN = /\[bench:([A-Za-z0-9_-]+)\]/;
/** Asks for a streamed reply of this many content deltas, written at once (the growth curve's streams). */
export const deltasTag = (count: number) => `[bench-deltas:${count}]`;
const DELTAS = /\[bench-deltas:(\d+)\]/;
/** Asks for a reply as a real model's comes: `chunks` content deltas, each after `waitMs` (streamed), or the whole reply after chunks × waitMs. */
export const slowTag = (chunks: number, waitMs: number) => `[bench-slow:${chunks}:${waitMs}]`;
const SLOW = /\[bench-slow:(\d+):(\d+)\]/;
/** Asks for one call of this tool (arguments `{"message":"bench"}`) before the reply: the run's first call answers with it, the one after its result with text. */
export const toolTag = (name: string) => `[bench-tool:${name}]`;
const TOOL = /\[bench-tool:([A-Za-z0-9_-]+)\]/;

/**
 * After the first chunk, the rest of a streamed reply follows this much later, as a real model's
 * would: a path that holds deltas back until the provider's reply ends then shows up as overhead.
 */
export const STREAM_TAIL_MS = 50;

const REPLY = ['stub ', 'reply'];
const USAGE = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, prompt_tokens_details: { cached_tokens: 0 } };

/**
 * An OpenAI-compatible Chat Completions stub (the shape of test/stack/stubProvider.ts's default
 * reply) that answers at once and, for streamed calls, notes when it wrote the first content chunk.
 * It lives in the bench's own process, so that moment and the client's read the same clock.
 */
export class BenchStub extends LoopbackServer {
  private readonly firstChunkAt = new Map<string, number>();
  /** Provider requests being answered now, and the most at once since resetPeak(). */
  inFlight = 0;
  peakInFlight = 0;
  /** Provider requests by the bench's token in their input: more than one for a token is a call made twice. */
  readonly callsByToken = new Map<string, number>();

  resetPeak(): void {
    this.peakInFlight = this.inFlight;
  }

  /** When the first content chunk for this token was written (performance.now()), once. */
  takeFirstChunkAt(token: string): number | undefined {
    const at = this.firstChunkAt.get(token);
    this.firstChunkAt.delete(token);
    return at;
  }

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      res.writeHead(404).end();
      return;
    }
    const body = await readJson(req);
    this.inFlight++;
    this.peakInFlight = Math.max(this.peakInFlight, this.inFlight);
    try {
      await this.reply(body, res);
    } finally {
      this.inFlight--;
    }
  }

  private async reply(body: Record<string, any>, res: ServerResponse): Promise<void> {
    const base = { id: 'chatcmpl-bench', created: Math.floor(Date.now() / 1000), model: String(body.model) };
    const messages = (body.messages ?? []) as { role: string; content: unknown }[];
    const lastUserMessage = JSON.stringify(messages.filter((m) => m.role === 'user').at(-1)?.content ?? '');
    const token = TOKEN.exec(lastUserMessage)?.[1];
    if (token) this.callsByToken.set(token, (this.callsByToken.get(token) ?? 0) + 1);
    const slow = SLOW.exec(lastUserMessage);
    const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms).unref());
    if (slow && !body.stream) await wait(Number(slow[1]) * Number(slow[2]));
    const tool = TOOL.exec(lastUserMessage)?.[1];
    if (tool && !body.stream && messages.at(-1)?.role === 'user') {
      const message = { role: 'assistant', content: null, tool_calls: [{ id: 'call_0', type: 'function', function: { name: tool, arguments: '{"message":"bench"}' } }] };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: 'tool_calls' }], usage: USAGE }));
      return;
    }
    if (!body.stream) {
      const message = { role: 'assistant', content: REPLY.join('') };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: 'stop' }], usage: USAGE }));
      return;
    }
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] });
    const send = (payload: unknown) => res.write(`data: ${JSON.stringify(payload)}\n\n`);
    const finish = () => {
      send(chunk({}, 'stop'));
      send({ ...base, object: 'chat.completion.chunk', choices: [], usage: USAGE });
      res.end('data: [DONE]\n\n');
    };
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (slow) {
      for (let i = 0; i < Number(slow[1]); i++) {
        await wait(Number(slow[2]));
        if (res.destroyed) return;
        if (i === 0 && token) this.firstChunkAt.set(token, performance.now());
        send(chunk({ content: `w${i} ` }));
      }
      finish();
      return;
    }
    const deltas = DELTAS.exec(lastUserMessage)?.[1];
    if (deltas) {
      for (let i = 0; i < Number(deltas); i++) send(chunk({ content: `w${i} ` }));
      finish();
      return;
    }
    if (token) this.firstChunkAt.set(token, performance.now());
    send(chunk({ content: REPLY[0] }));
    await new Promise((resolve) => setTimeout(resolve, STREAM_TAIL_MS).unref());
    if (res.destroyed) return;
    send(chunk({ content: REPLY[1] }));
    finish();
  }
}
