import { readFileSync } from 'node:fs';
import type { TLSConfig } from '@temporalio/client';

/**
 * How the API's client and the workers reach Temporal (DESIGN.md §2): plain on the embedded dev
 * server; TLS with a server CA and/or a client certificate for a self-hosted cluster; an API key
 * (which implies TLS) for Temporal Cloud. Both processes build their connection from this one place.
 */
export interface TemporalConnectionOptions {
  address: string;
  tls?: TLSConfig;
  apiKey?: string;
}

type Env = Record<string, string | undefined>;

const file = (env: Env, name: string): Buffer | undefined => {
  const path = env[name];
  if (!path) return undefined;
  try {
    return readFileSync(path);
  } catch (err) {
    throw new Error(`${name} names a file that cannot be read (${path}): ${(err as Error).message}`);
  }
};

const on = (value: string | undefined) => ['1', 'true', 'yes', 'on'].includes((value ?? '').toLowerCase());

export function temporalConnectionOptions(env: Env = process.env): TemporalConnectionOptions {
  const address = env.TEMPORAL_ADDRESS || '127.0.0.1:7233';
  const apiKey = env.TEMPORAL_API_KEY || undefined;
  const crt = file(env, 'TEMPORAL_TLS_CERT');
  const key = file(env, 'TEMPORAL_TLS_KEY');
  if (Boolean(crt) !== Boolean(key)) throw new Error('TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together: a client certificate needs its key.');
  const ca = file(env, 'TEMPORAL_TLS_CA');
  const serverName = env.TEMPORAL_TLS_SERVER_NAME || undefined;
  const tls = on(env.TEMPORAL_TLS) || apiKey !== undefined || crt !== undefined || ca !== undefined || serverName !== undefined;
  return {
    address,
    ...(tls && {
      tls: {
        ...(serverName && { serverNameOverride: serverName }),
        ...(ca && { serverRootCACertificate: ca }),
        ...(crt && key && { clientCertPair: { crt, key } }),
      },
    }),
    ...(apiKey && { apiKey }),
  };
}
