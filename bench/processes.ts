import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import path from 'node:path';
import { freePort, SEARCH_ATTRIBUTE_FLAGS } from '../test/stack/temporalServer';

/** The project root; the bench runs compiled, from dist/bench/. */
export const ROOT = path.resolve(__dirname, '../..');

const STOP_GRACE_MS = 5000;

export function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Polls `ready` every 100 ms until it holds; a child dying meanwhile rejects through Children.died. */
export async function waitFor(what: string, ready: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await ready().catch(() => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${what} was not ready within ${timeoutMs / 1000} s`);
}

/**
 * Every process the bench starts. A child that exits before stopAll() rejects `died`, so the bench
 * stops rather than measure a dead process; its last output goes into the error.
 */
export class Children {
  private readonly running: { name: string; child: ChildProcess }[] = [];
  private stopping = false;
  private fail!: (err: Error) => void;
  readonly died = new Promise<never>((_, reject) => (this.fail = reject));

  constructor() {
    // Observed only while the bench races against it; a rejection after that is already handled.
    this.died.catch(() => undefined);
  }

  /** `echo`: forward the child's output, line by line and prefixed, to stderr (the service's warnings). */
  spawn(name: string, command: string, args: string[], env: NodeJS.ProcessEnv, echo: boolean): ChildProcess {
    const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let tail = '';
    const take = (chunk: Buffer) => {
      const text = chunk.toString();
      tail = (tail + text).slice(-4000);
      if (echo) for (const line of text.split('\n')) if (line.trim()) process.stderr.write(`[${name}] ${line}\n`);
    };
    child.stdout!.on('data', take);
    child.stderr!.on('data', take);
    child.once('exit', (code, signal) => {
      const at = this.running.findIndex((r) => r.child === child);
      if (at !== -1) this.running.splice(at, 1);
      if (!this.stopping) this.fail(new Error(`${name} exited (${signal ?? `code ${code}`}) during the bench:\n${tail}`));
    });
    this.running.push({ name, child });
    return child;
  }

  /**
   * SIGTERM (SIGKILL after a grace period): every child but the first together, then the first, the
   * Temporal server, which the workers need while they drain.
   */
  async stopAll(): Promise<void> {
    this.stopping = true;
    const [first, ...rest] = this.running;
    await Promise.all(rest.map((r) => stop(r.child)));
    if (first) await stop(first.child);
  }
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/**
 * An in-memory Temporal dev server on free ports, as test/stack/temporalServer.ts's startTemporal()
 * starts it. That function cannot be called from dist/: it finds the CLI relative to its own file,
 * which compiled is dist/test/stack/, one level too deep.
 */
export async function startTemporal(children: Children): Promise<string> {
  const [port, httpPort, metricsPort] = [await freePort(), await freePort(), await freePort()];
  children.spawn(
    'temporal',
    path.join(ROOT, '.tools/bin/temporal'),
    ['server', 'start-dev', '--headless', '--ip', '127.0.0.1', '--port', String(port), '--http-port', String(httpPort), '--metrics-port', String(metricsPort), '--log-level', 'error', ...SEARCH_ATTRIBUTE_FLAGS],
    process.env,
    false,
  );
  await waitFor('the Temporal dev server', () => answers(port), 30_000);
  return `127.0.0.1:${port}`;
}

/** Resident set size of a live process in MB, from /proc; undefined once it has gone. */
function rssMb(pid: number): number | undefined {
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? undefined : Number(kb) / 1024;
  } catch {
    return undefined;
  }
}

/** Samples the named processes' RSS every 200 ms; during() reports each one's peak over a phase. */
export class RssSampler {
  private peaks: Record<string, number> = {};
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly pids: Record<string, number>) {
    this.timer = setInterval(() => this.sample(), 200).unref();
  }

  private sample(): void {
    for (const [name, pid] of Object.entries(this.pids)) {
      const mb = rssMb(pid);
      if (mb !== undefined) this.peaks[name] = Math.max(this.peaks[name] ?? 0, mb);
    }
  }

  async during<T>(phase: () => Promise<T>): Promise<{ result: T; peaks: Record<string, number> }> {
    this.peaks = {};
    this.sample();
    const result = await phase();
    this.sample();
    return { result, peaks: this.peaks };
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
