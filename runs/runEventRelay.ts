import type { WorkflowHandle } from '@temporalio/client';
import { config } from '../infra/config';
import type { RunOutcome, RunResponse } from '../domain/runs';
import { runEventsKey, sseFrame, terminalEvent, TERMINAL_EVENTS } from '../domain/streamEvents';
import type { Principal } from '../callers/principal';
import { isShuttingDown, onShutdown } from './shutdown';
import { openStreams, runAnswers } from '../infra/metrics';
import { runStreams, type StreamEntry } from './runStreamReader';
import { listenForSettlement, outcomeOf } from './settlements';
import { cancelRun } from './cancelRun';
import { runAsItStands } from './asItStands';

/**
 * How a run's events are written to the client: the spec's SSE frames, or another API's shapes (the
 * `/v1` surface's chunks and events, api/openai/). `frame` answers '' for an event the wire has no shape for.
 */
export interface StreamWire {
  frame(type: string, data: string, id?: string): string;
  /**
   * For a wire whose clients answer tool calls with a new request (OpenAI's): the stream ends when
   * the run waits on its caller, with these frames of the run as it stands (undefined while the run
   * waits on others only, such as an approver: the stream goes on). The run goes on waiting.
   */
  waiting?(run: RunResponse): string | undefined;
}

const SPEC_WIRE: StreamWire = { frame: sseFrame };

/**
 * Where a relayed stream's text goes (the API's event-stream response): opened once, before the
 * first event, and told when its client goes away.
 */
export interface EventSink {
  open(): void;
  /** Writes nothing once the sink has ended (a shutdown may end it while a read is under way). */
  write(text: string): void;
  end(): void;
  onClose(listener: () => void): void;
}

export interface RelayOptions {
  /** Who follows the run: a run that waits on its caller is read as this caller may see it. */
  principal: Principal;
  /** The spec's frames unless given. */
  wire?: StreamWire;
  runId: string;
  requestId: string;
  /** Replay after this stream entry (Last-Event-ID); from the beginning when absent. */
  after?: string;
  /** The original stream's client going away cancels the run; a follower's does not. */
  cancelOnDisconnect: boolean;
}

function failure(o: RelayOptions): RunOutcome {
  return {
    run: { id: o.runId, status: 'failed', agent: '', agent_version: 0, output: [], usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0, cached_tokens: 0 }, metadata: {}, request_id: o.requestId, trace_id: '' },
    error: { code: 'internal_error', message: 'Internal error.' },
  };
}

/** A streamed run counts once, with the status its terminal event reports (a failure may be `blocked`). */
function countAnswer(type: string, data: string): void {
  let status = type.slice('response.'.length);
  if (status === 'failed') status = (JSON.parse(data) as { status?: string }).status ?? status;
  runAnswers.inc({ status });
}

/**
 * Relays a run's events from its Redis stream to the client, whichever API instance that is.
 * The process's shared reader (runStreamReader.ts) reads the stream; this client holds no connection
 * of its own. Exactly one terminal event ends the stream: the run's own, or, when the stream lost it
 * (worker died, Redis hiccuped), one derived from the run's outcome (announced, or from its closed
 * workflow). When this instance shuts down, the stream ends without one and the run goes on: the
 * client resumes with Last-Event-ID on another.
 */
export async function relayRunEvents(sink: EventSink, handle: WorkflowHandle, o: RelayOptions): Promise<void> {
  sink.open();
  openStreams.inc();
  let closed = false;
  let terminal = false;
  // This instance is shutting down: the stream ends, the run goes on, the client resumes elsewhere.
  let handedOver = false;
  let end!: () => void;
  const ended = new Promise<void>((resolve) => (end = resolve));
  const over = () => terminal || closed || handedOver;
  const write = (text: string) => sink.write(text);
  const wire = o.wire ?? SPEC_WIRE;
  const finish = (type: string, data: string, id?: string) => {
    write(wire.frame(type, data, id));
    terminal = true;
    countAnswer(type, data);
    end();
  };
  // A run that waits for people is not cancelled by its stream going away: its client comes back with Last-Event-ID.
  let cancelOnDisconnect = o.cancelOnDisconnect;
  let heardAt = 0;
  // The calls are recorded before they are announced: the run read after their events shows them all,
  // or none when they were answered since (a stream replayed later goes on).
  const endIfWaiting = async () => {
    const run = await runAsItStands(o.principal, o.runId);
    const frames = run.required_action && wire.waiting!(run);
    if (!frames || over()) return;
    write(frames);
    terminal = true;
    end();
  };
  const relay = (entries: StreamEntry[]) => {
    heardAt = Date.now();
    let waits = false;
    for (const { id, type, data } of entries) {
      if (over()) return;
      if (type === 'response.tool.action_required') {
        cancelOnDisconnect = false;
        waits = true;
      }
      if (TERMINAL_EVENTS.has(type)) finish(type, data, id);
      else write(wire.frame(type, data, id));
    }
    if (waits && wire.waiting) endIfWaiting().catch(() => undefined);
  };

  const follow = runStreams().follow(runEventsKey(o.runId), o.after ?? '0-0', relay);
  // The worker tells of each entry on the run's channel; what came before the subscription is read once it is in place.
  const settlement = listenForSettlement(o.runId, () => follow.poke());
  void settlement.ready.then(() => follow.poke());
  const keepAlive = setInterval(() => write(': keep-alive\n\n'), config().sseKeepaliveMs);
  sink.onClose(() => {
    closed = true;
    end();
    // A connection closed while this instance shuts down was closed by the shutdown, not by the client.
    if (!terminal && !handedOver && !isShuttingDown() && cancelOnDisconnect) cancelRun(handle, o.runId).catch(() => undefined);
  });
  const unregister = onShutdown(() => {
    handedOver = true;
    end();
  });
  // The run is over: what its stream still holds is read now, and without a terminal event there the
  // stream lost it, so it ends with the one the outcome gives. A client that resumes a run's stream
  // may find the run long over: its workflow is asked at once.
  outcomeOf(handle, settlement, { firstAskMs: o.after === undefined ? undefined : 0, heardAt: () => heardAt })
    .catch(() => failure(o))
    .then(async (outcome) => {
      if (over()) return;
      await follow.catchUp().catch(() => undefined);
      if (over()) return;
      const event = terminalEvent(outcome);
      finish(event.type, JSON.stringify(event.data));
    });
  try {
    await ended;
  } finally {
    openStreams.dec();
    follow.close();
    settlement.stop();
    unregister();
    clearInterval(keepAlive);
    sink.end();
  }
}
