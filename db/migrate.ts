import path from 'node:path';
import { Client } from 'pg';
import { SequelizeStorage, Umzug } from 'umzug';
import type { QueryInterface } from 'sequelize';
import { config } from '../infra/config';
import { closeDb, db } from './sequelize';

export type Migration = (params: { context: QueryInterface }) => Promise<void>;

/** Creates the database named in DATABASE_URL when it does not exist yet (idempotent). */
export async function ensureDatabase(url = config().databaseUrl): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount === 0) await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
  } catch (err) {
    // Two processes may race to create it; the loser sees duplicate_database and carries on.
    if ((err as { code?: string }).code !== '42P04') throw err;
  } finally {
    await client.end();
  }
}

export function migrator(): Umzug<QueryInterface> {
  const sequelize = db();
  return new Umzug({
    migrations: {
      glob: ['migrations/*.{js,ts}', { cwd: __dirname, ignore: ['**/*.d.ts', '**/*.map'] }],
      resolve: ({ name, path: file, context }) => {
        const mod = require(file!) as { up: Migration; down?: Migration };
        return { name: path.basename(name, path.extname(name)), up: async () => mod.up({ context }), down: async () => mod.down?.({ context }) };
      },
    },
    context: sequelize.getQueryInterface(),
    storage: new SequelizeStorage({ sequelize, tableName: 'schema_migrations' }),
    logger: undefined,
  });
}

/**
 * Applies pending migrations. An advisory lock held on a connection of its own (the pool could
 * hand the unlock to another session) keeps concurrent starters from racing.
 */
export async function migrate(): Promise<string[]> {
  await ensureDatabase();
  const lock = new Client({ connectionString: config().databaseUrl });
  await lock.connect();
  try {
    await lock.query('SELECT pg_advisory_lock(724031)');
    const applied = await migrator().up();
    return applied.map((m) => m.name);
  } finally {
    await lock.end();
  }
}

if (require.main === module) {
  migrate()
    .then(async (names) => {
      process.stdout.write(JSON.stringify({ applied: names }) + '\n');
      await closeDb();
    })
    .catch(async (err) => {
      process.stderr.write(JSON.stringify({ error: { message: String(err?.message ?? err) } }) + '\n');
      await closeDb();
      process.exit(1);
    });
}
