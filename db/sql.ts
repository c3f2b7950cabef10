import { createHash } from 'node:crypto';
import type { Client } from 'pg';
import { storable } from '../domain/storable';
import { DependencyUnavailable, postgresUnavailable } from '../infra/dependencyErrors';
import { dependencyAnswered, dependencyFailed } from '../infra/dependencyOutages';
import { db } from './sequelize';

/**
 * A statement of the hot path, sent by name so that each pooled connection prepares it once and
 * PostgreSQL plans it once instead of on every call (planning was most of a short query's cost:
 * 0.35 ms of PostgreSQL CPU per call unprepared, 0.05 ms prepared). The name is derived from the text,
 * so two statements can never share one.
 */
export interface Statement {
  name: string;
  text: string;
}

export function statement(text: string): Statement {
  return { name: `aes_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`, text };
}

/**
 * Runs statements on one connection. JSON values must be passed through JSON.stringify (pg would send
 * arrays as SQL arrays). Every value is made storable here (domain/storable.ts), whatever it came from.
 */
export interface Sql {
  rows<T>(s: Statement, values: unknown[]): Promise<T[]>;
  /** How many rows a write touched. */
  rowCount(s: Statement, values: unknown[]): Promise<number>;
}

function on(client: Client): Sql {
  return {
    async rows<T>(s: Statement, values: unknown[]) {
      return (await client.query({ name: s.name, text: s.text, values: values.map(storable) })).rows as T[];
    },
    async rowCount(s: Statement, values: unknown[]) {
      return (await client.query({ name: s.name, text: s.text, values: values.map(storable) })).rowCount ?? 0;
    },
  };
}

/** Thrown when a transaction could not be rolled back: its connection must not go back to the pool. */
class Unusable extends Error {}

/** The server's absence is named as such, so callers can wait it out and the API answer 503 (infra/dependencyErrors.ts). */
function named(err: unknown): unknown {
  if (!postgresUnavailable(err)) return err;
  dependencyFailed('postgres', err);
  return new DependencyUnavailable('postgres', err);
}

/** Borrows a connection of the process's one pool (Sequelize's) for `work`, and gives it back. */
async function borrow<T>(work: (client: Client) => Promise<T>): Promise<T> {
  let result: T;
  try {
    result = await borrowed(work);
  } catch (err) {
    throw named(err);
  }
  dependencyAnswered('postgres');
  return result;
}

async function borrowed<T>(work: (client: Client) => Promise<T>): Promise<T> {
  const manager = db().connectionManager;
  const connection = await manager.getConnection({ type: 'write' });
  let reusable = true;
  try {
    return await work(connection as unknown as Client);
  } catch (err) {
    // A connection the server dropped is not given back: the next borrower gets a fresh one.
    if (postgresUnavailable(err)) reusable = false;
    if (!(err instanceof Unusable)) throw err;
    reusable = false;
    throw err.cause;
  } finally {
    if (reusable) manager.releaseConnection(connection);
    else await manager.destroyConnection(connection).catch(() => undefined);
  }
}

/** One statement on a pooled connection. */
export const sql: Sql = {
  rows: (s, values) => borrow((client) => on(client).rows(s, values)),
  rowCount: (s, values) => borrow((client) => on(client).rowCount(s, values)),
};

const PING = statement('SELECT 1');

/** Whether PostgreSQL answers (readiness). */
export async function ping(): Promise<void> {
  await sql.rows(PING, []);
}

/** Runs `work` in one transaction on one connection: committed when it resolves, rolled back when it throws. */
export function transaction<T>(work: (sql: Sql) => Promise<T>): Promise<T> {
  return borrow(async (client) => {
    await client.query('BEGIN');
    try {
      const result = await work(on(client));
      await client.query('COMMIT');
      return result;
    } catch (err) {
      // A connection that cannot roll back may still be inside the transaction: it is closed instead of reused.
      await client.query('ROLLBACK').catch(() => {
        throw new Unusable('rollback failed', { cause: err });
      });
      throw err;
    }
  });
}

const STATEMENT_TIMEOUT = statement("SELECT set_config('statement_timeout', $1, true)");

/**
 * Runs `work` in one transaction whose statements PostgreSQL stops after `ms` each (57014): for reads
 * whose cost a caller's filters decide, so a slow one fails instead of holding a connection.
 */
export function withStatementTimeout<T>(ms: number, work: (sql: Sql) => Promise<T>): Promise<T> {
  return transaction(async (tx) => {
    await tx.rows(STATEMENT_TIMEOUT, [String(ms)]);
    return work(tx);
  });
}
