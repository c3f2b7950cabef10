import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client as Pg } from 'pg';

/**
 * A database of a test file's own, on the stack's PostgreSQL, with every migration (run compiled, as
 * `npm run migrate` does): for a deployment beside the stack's that no other test touches.
 */
export interface OwnDatabase {
  url: string;
  /** A connection to it, for the test's own reads. */
  pg: Pg;
  drop(): Promise<void>;
}

async function onServer(statement: string): Promise<void> {
  const admin = new Pg({ connectionString: process.env.DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(statement);
  } finally {
    await admin.end();
  }
}

export async function ownDatabase(prefix: string): Promise<OwnDatabase> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const url = Object.assign(new URL(process.env.DATABASE_URL!), { pathname: `/${name}` }).toString();
  await onServer(`CREATE DATABASE ${name}`);
  await promisify(execFile)(process.execPath, [path.join(__dirname, '../../dist/db/migrate.js')], { env: { ...process.env, DATABASE_URL: url } });
  const pg = new Pg({ connectionString: url });
  await pg.connect();
  return {
    url,
    pg,
    async drop() {
      await pg.end();
      await onServer(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}
