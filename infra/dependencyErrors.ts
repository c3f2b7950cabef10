/**
 * The one place an error is classified by cause: a dependency of ours (PostgreSQL, Redis, Temporal)
 * could not be reached, as opposed to a bad request, a provider's or tool's failure, or a bug. Such
 * errors are transient by nature (a failover, a restart): activities wait them out within the run's
 * deadline (activities/untilAvailable.ts), and the API answers them 503 with Retry-After.
 */
export type Dependency = 'postgres' | 'redis' | 'temporal';

/** Thrown by a dependency's own module (db/sql.ts) when its connection failed, naming which dependency it was. */
export class DependencyUnavailable extends Error {
  constructor(readonly dependency: Dependency, cause: unknown) {
    super(`${dependency} is unavailable: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'DependencyUnavailable';
  }
}

/** Sockets that never connected or were cut. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND']);

/**
 * PostgreSQL's own codes for "not now": class 08 (connection exception), 57P01 admin shutdown, 57P02
 * crash shutdown, 57P03 cannot connect now (starting up or shutting down), 53300 too many connections.
 */
const POSTGRES_CODE = /^(08...|57P0[123]|53300)$/;

/** What pg and Sequelize say when a connection died under a query or the pool could not give one. */
const POSTGRES_MESSAGES = [/Connection terminated/i, /not queryable/i, /timeout exceeded when trying to connect/i, /Client was closed/i];

function errorChain(err: unknown): Array<Record<string, unknown>> {
  const chain: Array<Record<string, unknown>> = [];
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; depth++) {
    const record = e as Record<string, unknown>;
    chain.push(record);
    e = record.cause ?? record.parent ?? record.original;
  }
  return chain;
}

/** Whether a failure of a PostgreSQL call was the server's absence (not a constraint, a syntax error, a timeout of ours). */
export function postgresUnavailable(err: unknown): boolean {
  return errorChain(err).some((e) => {
    const code = typeof e.code === 'string' ? e.code : '';
    const name = typeof e.name === 'string' ? e.name : '';
    return (
      NETWORK_CODES.has(code) ||
      POSTGRES_CODE.test(code) ||
      // Sequelize's ConnectionError family: refused, host not found, access denied at connect, acquire timeout.
      (name.startsWith('Sequelize') && name.includes('Connection')) ||
      POSTGRES_MESSAGES.some((m) => typeof e.message === 'string' && m.test(e.message))
    );
  });
}

/** gRPC's UNAVAILABLE: the Temporal frontend could not be reached. */
const GRPC_UNAVAILABLE = 14;

/** The dependency whose absence caused `err`, or undefined when something else did. */
export function unavailableDependency(err: unknown): Dependency | undefined {
  for (const e of errorChain(err)) {
    if (e instanceof DependencyUnavailable) return e.dependency;
    // ioredis: a command given up after its retries, or issued on a connection that ended.
    if (e.name === 'MaxRetriesPerRequestError' || (typeof e.message === 'string' && /^Connection is closed/.test(e.message))) return 'redis';
    if (e.code === GRPC_UNAVAILABLE && typeof e.details === 'string') return 'temporal';
    if (typeof e.name === 'string' && e.name.startsWith('Sequelize') && e.name.includes('Connection')) return 'postgres';
  }
  return undefined;
}

/**
 * PostgreSQL's refusal of what was written, as opposed to its absence: SQLSTATE class 22 (data
 * exception: a number out of range, text it cannot store), 23 (integrity constraint violation) or 54
 * (program limit exceeded: a value too large for an index). Written again, the same values are
 * refused again, so such a failure is never waited out.
 */
const POSTGRES_DATA_CODE = /^(22|23|54)[0-9A-Z]{3}$/;

/** The SQLSTATE of a PostgreSQL data error that caused `err` (POSTGRES_DATA_CODE), or undefined. */
export function postgresDataError(err: unknown): string | undefined {
  for (const e of errorChain(err)) {
    if (typeof e.code === 'string' && POSTGRES_DATA_CODE.test(e.code)) return e.code;
  }
  return undefined;
}
