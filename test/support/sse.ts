/** A plain SSE reader for tests: frames as a standard client would parse them. */
export interface Frame {
  id?: string;
  event?: string;
  data?: any;
  /** A comment line (keep-alive), without the leading colon. */
  comment?: string;
}

export async function* frames(res: Response): AsyncGenerator<Frame> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) !== -1) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const frame: Frame = {};
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) frame.comment = line.slice(1).trim();
        else if (line.startsWith('id: ')) frame.id = line.slice(4);
        else if (line.startsWith('event: ')) frame.event = line.slice(7);
        else if (line.startsWith('data: ')) frame.data = JSON.parse(line.slice(6));
      }
      yield frame;
    }
  }
}

export async function openStream(url: string, path: string, key: string, body?: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(url + path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined && { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
}

/** Every frame of a stream, to its end. */
export async function allFrames(res: Response): Promise<Frame[]> {
  const out: Frame[] = [];
  for await (const frame of frames(res)) out.push(frame);
  return out;
}

export const TERMINALS = ['response.completed', 'response.failed', 'response.cancelled'];
