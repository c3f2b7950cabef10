import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import Redis from 'ioredis';
import { Client as PgClient } from 'pg';
import type { Operation } from './load';

/** PostgreSQL backends publish their counters at most every 10 s when idle (PostgreSQL 15): waited for before reading. */
const STATS_SETTLE_MS = 11_000;

export interface StatementFigures {
  runs: number;
  /** Committed PostgreSQL transactions per run, in the bench's database. */
  transactions: number;
  /** Index and sequential scans per run, by table: one per statement reading the table, and a join's inner side once per probe. */
  scans: Record<string, number>;
  /** Rows inserted, updated or deleted per run, by table. */
  rows_written: Record<string, number>;
  /** Redis commands per run, by command. */
  redis: Record<string, number>;
}

interface Counters {
  transactions: number;
  scans: Map<string, number>;
  written: Map<string, number>;
  redis: Map<string, number>;
}

async function counters(pg: PgClient, redis: Redis): Promise<Counters> {
  const [{ rows: db }, { rows: tables }, info] = await Promise.all([
    pg.query<{ n: string }>('SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()'),
    pg.query<{ relname: string; scans: string; written: string }>(
      'SELECT relname, coalesce(seq_scan, 0) + coalesce(idx_scan, 0) AS scans, n_tup_ins + n_tup_upd + n_tup_del AS written FROM pg_stat_user_tables',
    ),
    redis.info('commandstats'),
  ]);
  return {
    transactions: Number(db[0].n),
    scans: new Map(tables.map((t) => [t.relname, Number(t.scans)])),
    written: new Map(tables.map((t) => [t.relname, Number(t.written)])),
    redis: new Map([...info.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)].map((m) => [m[1], Number(m[2])])),
  };
}

const round2 = (x: number) => Math.round(x * 100) / 100;

/**
 * What the runs added per run: the growth over the measured window less what the idle window (the
 * same stack doing nothing: the dispatcher's polls, say) grew at the same rate; what did not move is left out.
 */
function perRun(idle: [Map<string, number>, Map<string, number>], measured: [Map<string, number>, Map<string, number>], idleShare: number, runs: number): Record<string, number> {
  const grew = (pair: [Map<string, number>, Map<string, number>], name: string) => (pair[1].get(name) ?? 0) - (pair[0].get(name) ?? 0);
  const out: Record<string, number> = {};
  for (const name of measured[1].keys()) {
    const n = round2((grew(measured, name) - grew(idle, name) * idleShare) / runs);
    if (n > 0) out[name] = n;
  }
  return Object.fromEntries(Object.entries(out).sort((a, b) => b[1] - a[1]));
}

/**
 * What one run costs PostgreSQL and Redis in statements: `runs` runs one by one, with the counters
 * PostgreSQL and Redis keep read before and after, less what an idle window of the same stack grew
 * (the outbox dispatcher's idle polls); the dispatcher's work for the runs' own events stays in. Redis
 * counts are server-wide: nothing else may use that Redis meanwhile.
 */
export async function statementsPerRun(run: Operation, runs: number): Promise<StatementFigures> {
  const pg = new PgClient({ connectionString: process.env.DATABASE_URL });
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  await pg.connect();
  try {
    // An idle window first, so the background's own work can be taken out of the runs' figures.
    await delay(STATS_SETTLE_MS);
    const idleFrom = await counters(pg, redis);
    let at = performance.now();
    await delay(STATS_SETTLE_MS);
    const idleTo = await counters(pg, redis);
    const idleMs = performance.now() - at;
    at = performance.now();
    for (let i = 0; i < runs; i++) await run();
    await delay(STATS_SETTLE_MS);
    const to = await counters(pg, redis);
    const share = (performance.now() - at) / idleMs;
    const each = (pick: (c: Counters) => Map<string, number>) => perRun([pick(idleFrom), pick(idleTo)], [pick(idleTo), pick(to)], share, runs);
    return {
      runs,
      transactions: round2((to.transactions - idleTo.transactions - (idleTo.transactions - idleFrom.transactions) * share) / runs),
      scans: each((c) => c.scans),
      rows_written: each((c) => c.written),
      redis: each((c) => c.redis),
    };
  } finally {
    await pg.end();
    redis.disconnect();
  }
}
