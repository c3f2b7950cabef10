import { types } from 'pg';
import { Sequelize } from 'sequelize';
import { config } from '../infra/config';

// bigint columns (keys, credit balances) stay far below 2^53: read them as numbers, not strings.
types.setTypeParser(20, (value) => Number(value));

let instance: Sequelize | undefined;

/** The process's one connection pool to the system of record. */
export function db(): Sequelize {
  instance ??= new Sequelize(config().databaseUrl, {
    dialect: 'postgres',
    logging: false,
    pool: { max: config().dbPoolMax, min: 0, idle: 10_000 },
  });
  return instance;
}

export async function closeDb(): Promise<void> {
  if (instance) await instance.close();
  instance = undefined;
}
