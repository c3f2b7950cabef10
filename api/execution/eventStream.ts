import type { Context } from 'koa';
import type { WorkflowHandle } from '@temporalio/client';
import { STREAM_VERSION } from '../../domain/streamEvents';
import type { AppState } from '../middleware/state';
import { relayRunEvents, type EventSink, type RelayOptions } from '../../runs/runEventRelay';

type Ctx = Context & { state: AppState };

/** The request's response as a server-sent event stream, which Koa leaves to it. */
function eventStream(ctx: Ctx): EventSink {
  ctx.respond = false;
  const res = ctx.res;
  return {
    open() {
      res.writeHead(200, {
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-cache, no-transform',
        Connection: 'keep-alive',
        'X-Accel-Buffering': 'no',
        'X-Stream-Version': STREAM_VERSION,
        'X-Request-Id': ctx.state.requestId,
      });
      // Sent now, not with the first event: a stream resumed while its run waits for people may have none for hours.
      res.flushHeaders();
      res.socket?.setNoDelay(true);
    },
    write(text) {
      if (!res.writableEnded) res.write(text);
    },
    end() {
      if (!res.writableEnded) res.end();
    },
    onClose(listener) {
      res.on('close', listener);
    },
  };
}

/** A run's events to this request's client, as the caller may see them (runs/runEventRelay.ts). */
export function streamRunEvents(ctx: Ctx, handle: WorkflowHandle, o: Omit<RelayOptions, 'principal' | 'requestId'>): Promise<void> {
  return relayRunEvents(eventStream(ctx), handle, { ...o, principal: ctx.state.principal!, requestId: ctx.state.requestId });
}
