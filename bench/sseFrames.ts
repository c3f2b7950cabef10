/**
 * The frames of an event stream as they arrive, each with the time its bytes were read
 * (performance.now()) and its event type (none for a keep-alive comment).
 */
export async function* timedFrames(res: Response): AsyncGenerator<{ frame: string; at: number; event?: string }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    const at = performance.now();
    buffer += decoder.decode(value, { stream: true });
    for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      yield { frame, at, event: /^event: (.+)$/m.exec(frame)?.[1] };
    }
  }
}
