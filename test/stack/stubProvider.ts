import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { ReadableStream } from 'node:stream/web';
import { LoopbackServer, readJson } from './loopbackServer';

/**
 * A stub OpenAI-compatible Chat Completions server whose replies each test scripts. Scripts are
 * keyed by the request's `model`, so parallel test files never read each other's replies: each test
 * gives its agent a model name of its own.
 *
 * A model named `real:<anything>` is not scripted: its requests are recorded and relayed unchanged
 * to the real model server (workers/modelServer.py), whose answer, status, body and stream as it
 * wrote them, goes back unchanged. The worker has one provider URL; this lets a test file reach the
 * real model through it.
 */
export const REAL_MODEL_PREFIX = 'real:';
export interface StubReply {
  /** Reply text; streamed as one chunk per element of `chunks` when given. */
  text?: string;
  chunks?: string[];
  /** Each call's id is `call_<index>` unless given (a provider may give two calls of one reply one id). */
  toolCalls?: { name: string; arguments: string; id?: string }[];
  /** Reply with the text of the request's tool results (joined by newlines), as a model quoting its tools does. */
  echoToolResults?: boolean;
  /** Answer with this HTTP status and an OpenAI-style error body instead. */
  status?: number;
  /** Headers of that answer, such as `retry-after`. */
  headers?: Record<string, string>;
  /** Wait before answering, and between streamed chunks. */
  delayMs?: number;
  chunkDelayMs?: number;
  usage?: { prompt_tokens: number; completion_tokens: number; cached_tokens?: number };
  /** Report no usage at all (as servers that ignore `stream_options`, or proxies that drop the field, do). */
  noUsage?: boolean;
  /** Decline: OpenAI's `message.refusal` (streamed as `delta.refusal`), content null. */
  refusal?: string;
  /** The reply ran to the request's max_tokens: `finish_reason: "length"`. */
  truncated?: boolean;
  /**
   * Answer a request that carries `response_format: {type: "json_schema"}` with a 400 about the
   * response format, as a server without schema support does, without using up this reply.
   */
  refusesJsonSchema?: boolean;
  /**
   * Held until this many requests of the model are held at once, then all answered: a test of how
   * many calls the service has in flight together that no machine's speed can pass or fail. A request
   * its client gave up on no longer counts (its retry does), and once they have all been answered,
   * later `together` replies are not held.
   */
  together?: number;
  /** Held until the test releases the model's held requests (POST /_stub/release). */
  hold?: boolean;
}

export interface RecordedRequest {
  /** As the provider received it; tests read arbitrary fields of it. */
  body: Record<string, any>;
  /** Its headers (lowercase names), such as the `traceparent` the service sends. */
  headers: IncomingHttpHeaders;
  /** True when the client went away before the reply finished. */
  aborted: boolean;
  /** For a relayed request (`real:` models): the usage the real model server reported, once it has answered. */
  relayedUsage?: { prompt_tokens: number; completion_tokens: number };
  /** For a relayed request: why the real model's reply ended (`stop`, or `length` at its cap). */
  relayedFinish?: string;
}

interface Script {
  replies: StubReply[];
  requests: RecordedRequest[];
  /** Requests held (by `together` or `hold`), each with its release. */
  held: { request: RecordedRequest; release: () => void }[];
  /** Whether a `together` gathering has been answered. */
  gathered: boolean;
}

const DEFAULT_REPLY: StubReply = { text: 'stub reply' };

// Unref'd: a scripted delay must not keep the test run alive after teardown.
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms).unref());

function usageOf(reply: StubReply) {
  const u = reply.usage ?? { prompt_tokens: 10, completion_tokens: 5 };
  return {
    prompt_tokens: u.prompt_tokens,
    completion_tokens: u.completion_tokens,
    total_tokens: u.prompt_tokens + u.completion_tokens,
    prompt_tokens_details: { cached_tokens: u.cached_tokens ?? 0 },
  };
}

function toolCallsOf(reply: StubReply) {
  return (reply.toolCalls ?? []).map((c, index) => ({ index, id: c.id ?? `call_${index}`, type: 'function', function: { name: c.name, arguments: c.arguments } }));
}

/** The usage in an answer: the JSON body's, or the last SSE chunk's that carries one. */
function finishReason(reply: StubReply): string {
  return reply.toolCalls ? 'tool_calls' : reply.truncated ? 'length' : 'stop';
}

function answerObjects(answer: string): Record<string, any>[] {
  const objects = answer.trimStart().startsWith('{') ? [answer] : answer.split('\n').filter((line) => line.startsWith('data: {')).map((line) => line.slice(6));
  return objects.map((o) => JSON.parse(o));
}

function reportedUsage(answer: string): RecordedRequest['relayedUsage'] {
  return answerObjects(answer).map((o) => o.usage).filter(Boolean).at(-1);
}

function reportedFinish(answer: string): string | undefined {
  return answerObjects(answer).map((o) => o.choices?.[0]?.finish_reason).filter(Boolean).at(-1);
}

/**
 * The whole provider failing, whatever the model (a test's own StubProvider): every chat request is
 * answered with `status` (and `headers`, such as `retry-after`), or its connection is cut (`cut`), as a
 * provider in a storm, an outage or gone from the network does.
 */
export type StubFault = { status: number; headers?: Record<string, string> } | 'cut';

export class StubProvider extends LoopbackServer {
  private readonly scripts = new Map<string, Script>();
  private fault: StubFault | undefined;
  /** Chat requests the fault answered, since the stub started. */
  faulted = 0;
  /** Chat requests the stub received (faulted or not), since it started. */
  asked = 0;
  /** Chat requests being answered now (held ones included), and the most there ever were at once. */
  atOnce = 0;
  mostAtOnce = 0;

  /** Turns the fault switch: on with a fault, off with none. */
  setFault(fault: StubFault | undefined): void {
    this.fault = fault;
  }

  /**
   * `relayAll`: every model's requests are relayed to the real model server, and so are llama.cpp's own
   * endpoints the service asks (its slot size, /props; its prompt count, /apply-template and /tokenize):
   * a deployment of the service whose provider is the embedded model, with what it sends recorded.
   */
  constructor(
    private readonly realModelUrl?: string,
    private readonly realModelKey?: string,
    private readonly relayAll = false,
  ) {
    super();
  }

  private script(model: string): Script {
    let script = this.scripts.get(model);
    if (!script) {
      script = { replies: [], requests: [], held: [], gathered: false };
      this.scripts.set(model, script);
    }
    return script;
  }

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://stub');
    if (req.method === 'POST' && url.pathname === '/_stub/script') {
      const { model, replies } = (await readJson(req)) as { model: string; replies: StubReply[] };
      this.scripts.set(model, { replies: [...replies], requests: [], held: [], gathered: false });
      res.writeHead(204).end();
      return;
    }
    if (req.method === 'POST' && url.pathname === '/_stub/release') {
      for (const held of this.scripts.get(url.searchParams.get('model') ?? '')?.held.splice(0) ?? []) held.release();
      res.writeHead(204).end();
      return;
    }
    if (req.method === 'GET' && url.pathname === '/_stub/held') {
      const script = this.scripts.get(url.searchParams.get('model') ?? '');
      // Those whose client is still waiting: a call given up on (and retried) is held no more.
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ held: script?.held.filter((h) => !h.request.aborted).length ?? 0 }));
      return;
    }
    if (req.method === 'GET' && url.pathname === '/_stub/requests') {
      const script = this.scripts.get(url.searchParams.get('model') ?? '');
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(script?.requests ?? []));
      return;
    }
    if (req.method === 'POST' && url.pathname === '/v1/chat/completions') {
      await this.complete(req, res);
      return;
    }
    if (this.relayAll && ['/props', '/apply-template', '/tokenize'].includes(url.pathname)) {
      await this.relay(url.pathname, req.method === 'POST' ? await readJson(req) : undefined, undefined, res);
      return;
    }
    res.writeHead(404).end();
  }

  private async complete(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readJson(req);
    const script = this.script(String(body.model));
    const recorded: RecordedRequest = { body, headers: req.headers, aborted: false };
    script.requests.push(recorded);
    this.asked++;
    this.mostAtOnce = Math.max(this.mostAtOnce, ++this.atOnce);
    res.on('close', () => this.atOnce--);
    if (this.fault) {
      this.faulted++;
      if (this.fault === 'cut') return void req.socket.destroy();
      res.writeHead(this.fault.status, { 'content-type': 'application/json', ...this.fault.headers }).end(JSON.stringify({ error: { message: `stub fault ${this.fault.status}`, type: 'server_error' } }));
      return;
    }
    res.on('close', () => {
      if (!res.writableFinished) recorded.aborted = true;
    });
    if (this.relayAll || String(body.model).startsWith(REAL_MODEL_PREFIX)) return this.relay('/v1/chat/completions', body, recorded, res);
    if (script.replies[0]?.refusesJsonSchema && (body.response_format as { type?: string } | undefined)?.type === 'json_schema') {
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.", type: 'invalid_request_error' } }));
      return;
    }
    const reply = script.replies.shift() ?? DEFAULT_REPLY;
    if ((reply.together && !script.gathered) || reply.hold) {
      await new Promise<void>((release) => {
        script.held.push({ request: recorded, release });
        if (reply.together && script.held.filter((h) => !h.request.aborted).length >= reply.together) {
          script.gathered = true;
          for (const h of script.held.splice(0)) h.release();
        }
      });
    }
    if (reply.delayMs) await sleep(reply.delayMs);
    if (reply.status) {
      res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers }).end(JSON.stringify({ error: { message: `stub status ${reply.status}`, type: 'server_error' } }));
      return;
    }
    const echoed = reply.echoToolResults ? (body.messages as { role: string; content: string }[]).filter((m) => m.role === 'tool').map((m) => m.content).join('\n') : undefined;
    const text = echoed ?? reply.text ?? (reply.chunks ? reply.chunks.join('') : '');
    const base = { id: 'chatcmpl-stub', created: Math.floor(Date.now() / 1000), model: String(body.model) };
    if (!body.stream) {
      const message = { role: 'assistant', content: reply.toolCalls || reply.refusal ? null : text, refusal: reply.refusal ?? null, ...(reply.toolCalls && { tool_calls: toolCallsOf(reply) }) };
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message, finish_reason: finishReason(reply) }], ...(!reply.noUsage && { usage: usageOf(reply) }) }),
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const send = (payload: unknown) => res.write(`data: ${JSON.stringify(payload)}\n\n`);
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] });
    const pieces = reply.refusal !== undefined ? (reply.chunks ?? [reply.refusal]) : (reply.chunks ?? (text ? [text] : []));
    for (const piece of pieces) {
      if (res.destroyed) return;
      send(chunk(reply.refusal === undefined ? { content: piece } : { refusal: piece }));
      if (reply.chunkDelayMs) await sleep(reply.chunkDelayMs);
    }
    if (reply.toolCalls) send(chunk({ tool_calls: toolCallsOf(reply) }));
    send(chunk({}, finishReason(reply)));
    if (!reply.noUsage) send({ ...base, object: 'chat.completion.chunk', choices: [], usage: usageOf(reply) });
    res.end('data: [DONE]\n\n');
  }

  private async relay(path: string, body: Record<string, unknown> | undefined, recorded: RecordedRequest | undefined, res: ServerResponse): Promise<void> {
    if (!this.realModelUrl) throw new Error('no real model server to relay to');
    const abort = new AbortController();
    res.on('close', () => abort.abort());
    const answer = await fetch(this.realModelUrl + path, {
      method: body ? 'POST' : 'GET',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${this.realModelKey}` },
      ...(body && { body: JSON.stringify(body) }),
      signal: abort.signal,
    });
    res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
    if (!answer.body) return void res.end();
    const text: string[] = [];
    Readable.fromWeb(answer.body as ReadableStream)
      .on('data', (chunk: Buffer) => text.push(chunk.toString('utf8')))
      .on('end', () => {
        if (!recorded) return;
        recorded.relayedUsage = reportedUsage(text.join(''));
        recorded.relayedFinish = reportedFinish(text.join(''));
      })
      .on('error', () => res.destroy())
      .pipe(res);
  }
}
