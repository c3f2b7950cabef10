import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../infra/projectRoot';

const STOP_GRACE_MS = 5000;
/** Where the children's output goes: the service logs at its production level, and the bench keeps it. */
export const LOG_DIR = path.join(PROJECT_ROOT, 'bench/results/logs');

/** Polls `ready` every 100 ms until it holds. */
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
 * stops rather than measure a dead process; the end of its output goes into the error.
 */
export class Children {
  private readonly running: { name: string; child: ChildProcess }[] = [];
  private stopping = false;
  /** Children stopped on purpose mid-bench (stop()), whose exit is no failure. */
  private readonly retired = new Set<ChildProcess>();
  private fail!: (err: Error) => void;
  readonly died = new Promise<never>((_, reject) => (this.fail = reject));

  constructor() {
    // Observed only while the bench races against it; a rejection after that is already handled.
    this.died.catch(() => undefined);
    mkdirSync(LOG_DIR, { recursive: true });
  }

  /**
   * Starts a child whose stdout and stderr go straight to bench/results/logs/<name>.log. Not through
   * a pipe to this process: the load generator is busy, and a child whose log pipe is not drained
   * buffers its log lines in memory, which would show up in its RSS.
   */
  spawn(name: string, command: string, args: string[], env: NodeJS.ProcessEnv, cwd = PROJECT_ROOT): ChildProcess {
    const file = path.join(LOG_DIR, `${name}.log`);
    const fd = openSync(file, 'w');
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', fd, fd] });
    closeSync(fd);
    return this.adopt(name, child, () => readFileSync(file, 'utf8').slice(-4000));
  }

  /** Watches a child started elsewhere (the Temporal dev server) like the ones spawn() starts. */
  adopt(name: string, child: ChildProcess, logTail?: () => string): ChildProcess {
    let tail = '';
    child.stderr?.on('data', (chunk: Buffer) => (tail = (tail + chunk.toString()).slice(-4000)));
    child.once('exit', (code, signal) => {
      if (logTail) tail = logTail();
      const at = this.running.findIndex((r) => r.child === child);
      if (at !== -1) this.running.splice(at, 1);
      if (!this.stopping && !this.retired.has(child)) this.fail(new Error(`${name} exited (${signal ?? `code ${code}`}) during the bench:\n${tail}`));
    });
    this.running.push({ name, child });
    return child;
  }

  /** Stops one child (SIGTERM, SIGKILL after a grace period) on purpose: its exit fails nothing. */
  async stop(child: ChildProcess): Promise<void> {
    this.retired.add(child);
    await stop(child);
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

const TICKS_PER_SECOND = 100;

interface ProcStat {
  rssMb: number;
  cpuMs: number;
}

/** A live process's resident set and CPU time so far, from /proc; undefined once it has gone. */
function procStat(pid: number): ProcStat | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15, rss (pages) 24.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return { rssMb: (Number(fields[21]) * 4096) / 2 ** 20, cpuMs: (ticks * 1000) / TICKS_PER_SECOND };
  } catch {
    return undefined;
  }
}

/**
 * Each live process's command name, read once per process: a scan of every process's name five times
 * a second for each group was 2 % of a core in the bench's own process, on the cores it measures. A pid
 * is not reused between two scans (Linux hands pids out in turn up to pid_max).
 */
const commOf = new Map<number, string>();

/** Every live process by command name (all of PostgreSQL's backends under `postgres`, say). */
function pidsByComm(): Map<string, number[]> {
  const live = new Set(readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).map(Number));
  for (const pid of commOf.keys()) if (!live.has(pid)) commOf.delete(pid);
  const byComm = new Map<string, number[]>();
  for (const pid of live) {
    let comm = commOf.get(pid);
    if (comm === undefined) {
      try {
        comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
      } catch {
        continue;
      }
      commOf.set(pid, comm);
    }
    const pids = byComm.get(comm);
    if (pids) pids.push(pid);
    else byComm.set(comm, [pid]);
  }
  return byComm;
}

/** A named group of processes: one pid, or every process with a command name (looked up per sample). */
export type Watched = number | { comm: string };

export interface PhaseUsage {
  /** Peak RSS of each group over the phase (the sum over a group's processes), MB. */
  peakRssMb: Record<string, number>;
  /** CPU time each group used during the phase, ms. */
  cpuMs: Record<string, number>;
}

/** Each group's processes, by pid. */
type Sample = Record<string, Map<number, ProcStat>>;

/**
 * Samples the watched processes every 200 ms: their peak RSS over a phase, and the CPU time each
 * used in it, which divided by the requests served gives what one request costs where.
 */
export class ProcessSampler {
  private peaks: Record<string, number> = {};
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly watched: Record<string, Watched>) {
    this.timer = setInterval(() => this.sample(), 200).unref();
  }

  /** Samples one more group from now on (a process started mid-bench). */
  watch(name: string, what: Watched): void {
    this.watched[name] = what;
  }

  private sample(): Sample {
    const now: Sample = {};
    const named = Object.values(this.watched).some((what) => typeof what !== 'number') ? pidsByComm() : undefined;
    for (const [name, what] of Object.entries(this.watched)) {
      const group = new Map<number, ProcStat>();
      for (const pid of typeof what === 'number' ? [what] : (named?.get(what.comm) ?? [])) {
        const stat = procStat(pid);
        if (stat) group.set(pid, stat);
      }
      now[name] = group;
      const rss = [...group.values()].reduce((sum, s) => sum + s.rssMb, 0);
      this.peaks[name] = Math.max(this.peaks[name] ?? 0, rss);
    }
    return now;
  }

  async during<T>(phase: () => Promise<T>): Promise<{ result: T; usage: PhaseUsage }> {
    this.peaks = {};
    const before = this.sample();
    const ownBefore = process.cpuUsage();
    const result = await phase();
    const after = this.sample();
    const own = process.cpuUsage(ownBefore);
    const cpuMs: Record<string, number> = { bench: (own.user + own.system) / 1000 };
    // Per process: one that started during the phase counts whole; one that ended in it is lost
    // (the pools keep their connections through a phase, so PostgreSQL's backends stay).
    for (const [name, group] of Object.entries(after)) {
      cpuMs[name] = [...group].reduce((sum, [pid, s]) => sum + s.cpuMs - (before[name]?.get(pid)?.cpuMs ?? 0), 0);
    }
    return { result, usage: { peakRssMb: { ...this.peaks }, cpuMs } };
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
