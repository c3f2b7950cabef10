import { createHash } from 'node:crypto';
import type Redis from 'ioredis';
import { now } from '../domain/clock';
import { config } from '../infra/config';
import { redis } from '../infra/redis';

export const DIMENSIONS = ['credential', 'tenant', 'tenant_endpoint', 'agent', 'principal'] as const;
export type Dimension = (typeof DIMENSIONS)[number];
/** Requests per window for each dimension; 0 switches a dimension off. */
export type Limits = Record<Dimension, number>;

/** What one request counts against. The MCP endpoint builds the same subject, so it shares the counters. */
export interface RateLimitSubject {
  /** The credential's public key id. */
  credential: string;
  /** The workspace's public id. */
  tenant: string;
  /** The endpoint's declared name, e.g. `responses`. */
  endpoint: string;
  /** The agent's public id as the request names it; no agent, no agent dimension. */
  agent?: string;
  /** The end user the request names (the spec's "principal"); none, no principal dimension. */
  endUser?: string;
}

export type RateLimitDecision = { allowed: true } | { allowed: false; dimension: Dimension; limit: number; windowSeconds: number; retryAfterSeconds: number };

export interface RateLimiterOptions {
  /** Overrides of the RATE_LIMIT_* configuration. */
  limits?: Partial<Limits>;
  windowSeconds?: number;
  redis?: () => Redis;
  /** A check that takes longer than this fails, so a hung Redis cannot hang requests. */
  timeoutMs?: number;
}

// Every counter is read before any is incremented, so a refused request consumes nothing; being one
// script, the check and the increments are atomic against every other request.
// KEYS: one counter per dimension. ARGV[1]: milliseconds the counters must outlive; ARGV[1 + i]: limit of KEYS[i].
const CHECK_SCRIPT = `
for i = 1, #KEYS do
  local used = tonumber(redis.call('GET', KEYS[i]) or '0')
  if used >= tonumber(ARGV[i + 1]) then return i end
end
for i = 1, #KEYS do
  if redis.call('INCR', KEYS[i]) == 1 then redis.call('PEXPIRE', KEYS[i], ARGV[1]) end
end
return 0
`;

interface WithCheck {
  aesRateLimitCheck(numKeys: number, ...args: (string | number)[]): Promise<number>;
}

function withCheck(client: Redis): WithCheck {
  if (!('aesRateLimitCheck' in client)) client.defineCommand('aesRateLimitCheck', { lua: CHECK_SCRIPT });
  return client as unknown as WithCheck;
}

const DOWN = new Set(['reconnecting', 'close', 'end']);

/** End-user references (possibly personal data) and overlong agent ids are hashed to keep keys short and opaque. */
const digest = (value: string) => createHash('sha256').update(value).digest('hex').slice(0, 32);
const readable = (id: string) => (id.length <= 64 ? id : digest(id));

function configuredLimits(): Limits {
  const c = config().rateLimits;
  return { credential: c.credential, tenant: c.tenant, tenant_endpoint: c.tenantEndpoint, agent: c.agent, principal: c.principal };
}

/**
 * Fixed-window counters in Redis for the five dimensions of the spec's rate limits, checked in one
 * atomic step. Windows are numbered from the injectable clock, so every API instance (kept in step
 * by NTP) counts into the same window.
 */
export class RateLimiter {
  constructor(private readonly options: RateLimiterOptions = {}) {}

  private limits(): Limits {
    return { ...configuredLimits(), ...this.options.limits };
  }

  async check(subject: RateLimitSubject): Promise<RateLimitDecision> {
    const windowSeconds = this.options.windowSeconds ?? 60;
    const windowMs = windowSeconds * 1000;
    const at = now();
    const window = Math.floor(at / windowMs);
    const windowEnd = (window + 1) * windowMs;
    const limits = this.limits();
    // The workspace hash tag keeps one request's counters in one slot, as a Redis Cluster script needs.
    const prefix = `rl:{${subject.tenant}}`;
    // The agent and end-user counters are scoped by workspace: naming another workspace's agent id
    // must not spend that workspace's allowance.
    const ids: [Dimension, string | undefined][] = [
      ['credential', subject.credential],
      ['tenant', subject.tenant],
      ['tenant_endpoint', subject.endpoint],
      ['agent', subject.agent === undefined ? undefined : readable(subject.agent)],
      ['principal', subject.endUser === undefined ? undefined : digest(subject.endUser)],
    ];
    const counters = ids.filter((c): c is [Dimension, string] => c[1] !== undefined && limits[c[0]] > 0);
    if (counters.length === 0) return { allowed: true };
    const keys = counters.map(([dimension, id]) => `${prefix}:${dimension}:${id}:${window}`);
    // Relative expiry, so a clock moved by tests never makes a counter expire early.
    const ttlMs = windowEnd - at + 1000;
    const client = (this.options.redis ?? redis)();
    // A connection known to be down answers at once instead of after the timeout.
    if (DOWN.has(client.status)) throw new Error(`redis is ${client.status}`);
    const refused = await this.withTimeout(withCheck(client).aesRateLimitCheck(keys.length, ...keys, ttlMs, ...counters.map(([d]) => limits[d])));
    if (refused === 0) return { allowed: true };
    const dimension = counters[refused - 1][0];
    return { allowed: false, dimension, limit: limits[dimension], windowSeconds, retryAfterSeconds: Math.max(1, Math.ceil((windowEnd - at) / 1000)) };
  }

  private async withTimeout<T>(work: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('rate limit check timed out')), this.options.timeoutMs ?? 2000);
      timer.unref();
    });
    try {
      return await Promise.race([work, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

let instance: RateLimiter | undefined;

/** The process's limiter, shared by every endpoint that declares a rate limit and by MCP. */
export function rateLimiter(): RateLimiter {
  instance ??= new RateLimiter();
  return instance;
}

/** Replaces the process's limiter (tests use small limits); without an argument, back to the default. */
export function setRateLimiter(limiter?: RateLimiter): void {
  instance = limiter;
}
