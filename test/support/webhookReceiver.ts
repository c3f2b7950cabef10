import type { IncomingMessage, ServerResponse } from 'node:http';
import { LoopbackServer } from '../stack/loopbackServer';

export interface Received {
  path: string;
  headers: IncomingMessage['headers'];
  /** The exact bytes received, as signatures must be verified against them. */
  raw: Buffer;
  body: any;
  at: number;
}

/** What the receiver answers a request with: a status (and headers), `hang` to never answer, or `hold` until the test `release`s it. */
export type Reply = { status: number; headers?: Record<string, string> };
export type Answer = Reply | 'hang' | 'hold';

/**
 * A partner's webhook receiver on loopback: records every request, and answers each path by its
 * script (`answers`, in order, the last one repeating; 200 when unscripted).
 */
export class WebhookReceiver extends LoopbackServer {
  readonly received: Received[] = [];
  private readonly scripts = new Map<string, Answer[]>();
  private readonly held = new Map<string, ((reply: Reply) => void)[]>();

  script(path: string, answers: Answer[]): void {
    this.scripts.set(path, [...answers]);
  }

  /** Answers the requests held at `path` with `reply`. */
  release(path: string, reply: Reply): void {
    for (const answer of this.held.get(path) ?? []) answer(reply);
    this.held.delete(path);
  }

  at(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    const path = req.url ?? '/';
    this.received.push({ path, headers: req.headers, raw, body: JSON.parse(raw.toString('utf8')), at: Date.now() });
    const script = this.scripts.get(path) ?? [];
    const scripted = (script.length > 1 ? script.shift() : script[0]) ?? { status: 200 };
    if (scripted === 'hang') return;
    const answer = scripted === 'hold' ? await new Promise<Reply>((resolve) => this.held.set(path, [...(this.held.get(path) ?? []), resolve])) : scripted;
    res.writeHead(answer.status, answer.headers).end(answer.status >= 400 ? 'receiver says no' : '');
  }
}
