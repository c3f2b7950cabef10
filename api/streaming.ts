import type { Context } from 'koa';
import type { WorkflowHandle } from '@temporalio/client';
import type Redis from 'ioredis';
import { logger } from '../infra/logger';
import { config } from '../infra/config';
import type { RunOutcome } from '../domain/runs';
import { runEventsKey, sseFrame, STREAM_VERSION, terminalEvent, TERMINAL_EVENTS } from '../domain/streamEvents';
import { redis } from '../db/redis';
import { isShuttingDown, onShutdown } from './shutdown';
import type { AppState } from './state';
import { openStreams, runAnswers } from '../infra/metrics';

/** How long a read blocks in Redis before the loop looks at the run's outcome again. */
const BLOCK_MS = 1000;

export interface RelayOptions {
  runId: string;
  requestId: string;
  /** Replay after this stream entry (Last-Event-ID); from the beginning when absent. */
  after?: string;
  /** The original stream's client going away cancels the run; a follower's does not. */
  cancelOnDisconnect: boolean;
}

function outcomeOrFailure(handle: WorkflowHandle, o: RelayOptions): Promise<RunOutcome> {
  return handle.result().catch(
    (): RunOutcome => ({
      run: { id: o.runId, status: 'failed', agent: '', agent_version: 0, output: [], usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0, cached_tokens: 0 }, metadata: {}, request_id: o.requestId, trace_id: '' },
      error: { code: 'internal_error', message: 'Internal error.' },
    }),
  );
}

/** A streamed run counts once, with the status its terminal event reports (a failure may be `blocked`). */
function countAnswer(type: string, data: string): void {
  let status = type.slice('response.'.length);
  if (status === 'failed') status = (JSON.parse(data) as { status?: string }).status ?? status;
  runAnswers.inc({ status });
}

/**
 * Relays a run's events from its Redis stream to the client as SSE, whichever API instance that is.
 * Exactly one terminal event ends the stream: the run's own, or, when the stream lost it (worker
 * died, Redis hiccuped), one derived from the workflow's outcome. When this instance shuts down, the
 * stream ends without one and the run goes on: the client resumes with Last-Event-ID on another.
 */
export async function relayRunEvents(ctx: Context & { state: AppState }, handle: WorkflowHandle, o: RelayOptions): Promise<void> {
  ctx.respond = false;
  const res = ctx.res;
  res.writeHead(200, {
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache, no-transform',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
    'X-Stream-Version': STREAM_VERSION,
    'X-Request-Id': o.requestId,
  });
  res.socket?.setNoDelay(true);
  openStreams.inc();
  let closed = false;
  let terminal = false;
  // This instance is shutting down: the stream ends, the run goes on, the client resumes elsewhere.
  let handedOver = false;
  let reader: Redis | undefined;
  // Nothing is written once the stream has ended (a shutdown may end it while a read is under way).
  const write = (text: string) => {
    if (!res.writableEnded) res.write(text);
  };
  const keepAlive = setInterval(() => write(': keep-alive\n\n'), config().sseKeepaliveMs);
  res.on('close', () => {
    closed = true;
    reader?.disconnect();
    // A connection closed while this instance shuts down was closed by the shutdown, not by the client.
    if (!terminal && !handedOver && !isShuttingDown() && o.cancelOnDisconnect) handle.cancel().catch(() => undefined);
  });
  const unregister = onShutdown(() => {
    handedOver = true;
    reader?.disconnect();
    res.end();
  });

  let outcome: RunOutcome | undefined;
  const settled = outcomeOrFailure(handle, o).then((value) => (outcome = value));
  let lastId = o.after ?? '0-0';
  const key = runEventsKey(o.runId);
  try {
    reader = redis().duplicate();
    while (!closed && !terminal) {
      const knewOutcome = outcome !== undefined;
      let entries: [string, string[]][] = [];
      try {
        const read = await reader.xread('BLOCK', knewOutcome ? 200 : BLOCK_MS, 'STREAMS', key, lastId);
        entries = read?.[0]?.[1] ?? [];
      } catch (err) {
        if (closed) break;
        logger.warn({ err: String(err), run_id: o.runId }, 'run event stream read failed');
        await Promise.race([settled, new Promise((r) => setTimeout(r, 200))]);
      }
      for (const [id, fields] of entries) {
        const [, type, , data] = fields;
        write(sseFrame(type, data, id));
        lastId = id;
        if (TERMINAL_EVENTS.has(type)) {
          terminal = true;
          countAnswer(type, data);
          break;
        }
      }
      // The run is over and its stream had nothing more to say: emit the terminal event ourselves.
      if (!terminal && knewOutcome && entries.length === 0) {
        const event = terminalEvent(outcome!);
        const data = JSON.stringify(event.data);
        write(sseFrame(event.type, data));
        terminal = true;
        countAnswer(event.type, data);
      }
    }
  } finally {
    openStreams.dec();
    unregister();
    clearInterval(keepAlive);
    reader?.disconnect();
    if (!closed) res.end();
  }
}
