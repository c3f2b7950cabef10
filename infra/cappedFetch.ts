/**
 * A fetch whose answers are counted as they are read, for a client library that reads a server's
 * answers itself (the MCP SDK's transport): whatever the server sends, no more than the caps is ever
 * read. A body past its cap, or an event-stream line past its cap (a line the SSE parser would
 * buffer whole), errors the body, which cancels the response and so closes its connection, and is
 * told to `onOverflow`, so the caller can close whatever else shares that server.
 */

export interface AnswerCaps {
  /** Bytes of one message: a whole body, or one line of an event stream (an SSE `data:` line carries one whole message). */
  messageBytes: number;
  /** Bytes of a whole event stream, which may carry many messages. */
  streamBytes: number;
}

/** An answer past its cap: the server is cut off. */
export class AnswerTooLarge extends Error {
  readonly code = 'EANSWERTOOLARGE';
}

const NEWLINE = 0x0a;

/** The length of the longest line in `chunk`, given `carried` bytes of the line open before it, and the length of the line left open. */
function lines(chunk: Uint8Array, carried: number): { longest: number; open: number } {
  let longest = 0;
  let start = 0;
  let open = carried;
  for (let at = chunk.indexOf(NEWLINE); at !== -1; at = chunk.indexOf(NEWLINE, start)) {
    longest = Math.max(longest, open + at - start);
    open = 0;
    start = at + 1;
  }
  open += chunk.length - start;
  return { longest: Math.max(longest, open), open };
}

function counted(caps: AnswerCaps, eventStream: boolean, onOverflow: (err: AnswerTooLarge) => void): TransformStream<Uint8Array, Uint8Array> {
  const bodyBytes = eventStream ? caps.streamBytes : caps.messageBytes;
  let total = 0;
  let openLine = 0;
  return new TransformStream({
    transform(chunk, controller) {
      total += chunk.byteLength;
      let tooLarge: AnswerTooLarge | undefined;
      if (total > bodyBytes) tooLarge = new AnswerTooLarge(`the server's answer passed ${bodyBytes} bytes`);
      if (eventStream && !tooLarge) {
        const { longest, open } = lines(chunk, openLine);
        openLine = open;
        if (longest > caps.messageBytes) tooLarge = new AnswerTooLarge(`the server sent an event-stream line past ${caps.messageBytes} bytes`);
      }
      if (!tooLarge) return controller.enqueue(chunk);
      onOverflow(tooLarge);
      controller.error(tooLarge);
    },
  });
}

/**
 * `inner`, with each response's body capped: `capsOf` names the caps for the request (a listing may be
 * larger than a call's result, say).
 */
export function cappedFetch(inner: typeof fetch, capsOf: (init: RequestInit | undefined) => AnswerCaps, onOverflow: (err: AnswerTooLarge) => void): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const response = await inner(input, init);
    if (!response.body) return response;
    const eventStream = /^\s*text\/event-stream/i.test(response.headers.get('content-type') ?? '');
    const body = response.body.pipeThrough(counted(capsOf(init), eventStream, onOverflow));
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  }) as typeof fetch;
}
