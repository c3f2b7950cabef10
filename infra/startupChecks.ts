import { createHash } from 'node:crypto';
import { config, DEVELOPMENT_SIGNING_SECRET, metricsServed } from './config';
import { logger } from './logger';

/**
 * What the API and the workers check before they start (docs/operations.md, "Development mode and
 * startup refusals"). SIGNING_SECRET derives the document grants, the OAuth cookie and ID-token keys and every
 * workspace's tool secret; PAYLOAD_ENCRYPTION_KEYS seals Temporal payloads, stored idempotency answers
 * and webhook signing secrets. A process that would run on a secret anyone can read, guess or derive
 * refuses to start, naming the variable, unless DEVELOPMENT_MODE is on (`npm start`, the tests), where
 * the development defaults are let through with a warning. Called by the process entry points only
 * (api/server.ts, workers/main.ts), never on import.
 */

/** The shortest SIGNING_SECRET accepted outside development mode (characters). */
export const MIN_SIGNING_SECRET_LENGTH = 32;

/** Values shipped in examples and compose files (compared lower-case, without punctuation), and any value containing "changeme". */
const PLACEHOLDERS = new Set(['changeme', 'secret', 'signingsecret', 'password', 'replaceme', 'changethis', 'devsigningsecretchangeme', 'development', 'test']);

const normalised = (value: string) => value.toLowerCase().replace(/[^a-z0-9]/g, '');

function signingSecretProblem(raw: string | undefined): string | undefined {
  if (raw === undefined || raw === '') return 'SIGNING_SECRET is not set';
  const plain = normalised(raw);
  if (raw === DEVELOPMENT_SIGNING_SECRET || PLACEHOLDERS.has(plain) || plain.includes('changeme')) return 'SIGNING_SECRET is a published default value';
  if (raw.length < MIN_SIGNING_SECRET_LENGTH) return `SIGNING_SECRET is ${raw.length} characters long; it must be at least ${MIN_SIGNING_SECRET_LENGTH}`;
  if (new Set(raw).size < 6) return 'SIGNING_SECRET repeats a handful of characters; it must be random';
  return undefined;
}

/** The keys derived from published values, as infra/encryption.ts derives its development key. */
const derivedFromDefaults = new Set(
  [DEVELOPMENT_SIGNING_SECRET, 'change-me'].map((s) => createHash('sha256').update(`payload-encryption:${s}`).digest('base64')),
);

// Unset, the payload key is derived from SIGNING_SECRET, which is then checked as strong: the operator
// contract (DESIGN.md §3) names SIGNING_SECRET alone, and a deployment that sets only it still starts.
function payloadKeyProblems(raw: string | undefined): string[] {
  if (raw === undefined || raw === '') return [];
  const entries = raw.split(',').map((e) => e.trim()).filter(Boolean);
  if (entries.length === 0) return ['PAYLOAD_ENCRYPTION_KEYS names no key'];
  const problems: string[] = [];
  for (const [i, entry] of entries.entries()) {
    const at = entry.indexOf(':');
    const id = at < 1 ? `#${i + 1}` : `"${entry.slice(0, at)}"`;
    const text = at < 1 ? '' : entry.slice(at + 1);
    const key = Buffer.from(text, 'base64');
    if (at < 1 || at > 64 || !/^[A-Za-z0-9+/]+={0,2}$/.test(text)) problems.push(`PAYLOAD_ENCRYPTION_KEYS entry ${id} is not kid:base64`);
    else if (key.length !== 32) problems.push(`PAYLOAD_ENCRYPTION_KEYS key ${id} is ${key.length} bytes long; each key must be 32 random bytes`);
    else if (derivedFromDefaults.has(text)) problems.push(`PAYLOAD_ENCRYPTION_KEYS key ${id} is the development key`);
    else if (new Set(key).size < 16) problems.push(`PAYLOAD_ENCRYPTION_KEYS key ${id} repeats a handful of bytes; it must be random`);
  }
  return problems;
}

/** Every problem with the process's secrets, each naming its variable (empty: none). */
export function secretProblems(env: NodeJS.ProcessEnv = process.env): string[] {
  const signing = signingSecretProblem(env.SIGNING_SECRET);
  return [...(signing ? [signing] : []), ...payloadKeyProblems(env.PAYLOAD_ENCRYPTION_KEYS)];
}

export class StartupRefusal extends Error {
  constructor(readonly problems: string[]) {
    super(
      `refusing to start: ${problems.join('; ')}. Set SIGNING_SECRET to 32 or more random characters (openssl rand -hex 32) and ` +
        'PAYLOAD_ENCRYPTION_KEYS to kid:base64 of 32 random bytes (k1:$(openssl rand -base64 32)), or set DEVELOPMENT_MODE=1 for a development stack',
    );
    this.name = 'StartupRefusal';
  }
}

/**
 * Throws StartupRefusal when a secret is missing, a published default or too short, outside
 * development mode; in development mode logs what would have been refused. Then says once whether
 * metrics are off for want of METRICS_TOKEN (a worker only when it was given WORKER_METRICS_PORT).
 */
export function checkStartup(process_: 'api' | 'worker', env: NodeJS.ProcessEnv = process.env): void {
  const c = config();
  const problems = secretProblems(env);
  if (problems.length > 0) {
    if (!c.developmentMode) throw new StartupRefusal(problems);
    logger.warn({ problems }, 'DEVELOPMENT_MODE: starting with development secrets anyone can read; never run this way in production');
  }
  if (!env.PAYLOAD_ENCRYPTION_KEYS && !c.developmentMode) {
    logger.warn('PAYLOAD_ENCRYPTION_KEYS is not set: payloads are sealed with a key derived from SIGNING_SECRET, so changing that secret means a key change too (docs/operations.md, "Keys and the codec endpoint"); set a key ring of its own');
  }
  if (metricsServed(c)) return;
  if (process_ === 'api') logger.warn('metrics are off: GET /metrics answers 501 until METRICS_TOKEN is set');
  else if (c.workerMetricsPort !== undefined) logger.warn({ port: c.workerMetricsPort }, 'metrics are off: WORKER_METRICS_PORT is not opened until METRICS_TOKEN is set');
}
