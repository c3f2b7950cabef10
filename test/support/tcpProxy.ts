import net from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP proxy in front of a dependency (PostgreSQL, Redis, Temporal), so a test can take it away
 * from the processes it starts without touching the dependency the rest of the suite shares. `cut()`
 * drops every connection and stops listening, so new connections are refused (ECONNREFUSED) as when
 * a server is down; `restore()` listens again on the same port.
 */
export interface TcpProxy {
  port: number;
  /** Bytes sent to the dependency so far: a client that sent none made no query. */
  readonly bytesUp: number;
  /** `url` (the dependency's: postgres://…, redis://…) reaching it through this proxy instead. */
  through(url: string): string;
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function tcpProxy(upstream: { host: string; port: number }): Promise<TcpProxy> {
  const open = new Set<net.Socket>();
  let bytesUp = 0;
  const track = (socket: net.Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  };
  const server = net.createServer((client) => {
    const target = net.connect(upstream.port, upstream.host);
    track(client);
    track(target);
    client.on('data', (chunk: Buffer) => (bytesUp += chunk.length));
    client.pipe(target).pipe(client);
    // Either side going away takes the other with it, as a dropped network path would.
    client.once('error', () => target.destroy()).once('close', () => target.destroy());
    target.once('error', () => client.destroy()).once('close', () => client.destroy());
  });
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve((server.address() as AddressInfo).port);
      });
    });
  const stopListening = () => new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()));
  const port = await listen(0);
  return {
    port,
    get bytesUp() {
      return bytesUp;
    },
    through: (url) => Object.assign(new URL(url), { hostname: '127.0.0.1', port: String(port) }).toString(),
    async cut() {
      const closed = stopListening();
      for (const socket of open) socket.destroy();
      await closed;
    },
    async restore() {
      await listen(port);
    },
    async close() {
      const closed = stopListening();
      for (const socket of open) socket.destroy();
      await closed;
    },
  };
}
