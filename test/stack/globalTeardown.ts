import type { ChildProcess } from 'node:child_process';
import { Client } from 'pg';
import type { RunningWorkers } from '../../workers/worker';
import type { StubProvider } from './stubProvider';

export interface StackHandles {
  temporal: ChildProcess;
  s3: ChildProcess;
  model: ChildProcess;
  stub: StubProvider;
  workers: RunningWorkers;
  database: string;
}

export default async function globalTeardown(): Promise<void> {
  const stack = (globalThis as { __stack?: StackHandles }).__stack;
  if (!stack) return;
  await stack.workers.shutdown();
  const [{ closeDb }, { closeRedis }, { closeTemporal }] = await Promise.all([import('../../db/sequelize'), import('../../infra/redis'), import('../../infra/temporalClient')]);
  await Promise.all([closeDb(), closeRedis(), closeTemporal()]);
  await stack.stub.stop();
  await Promise.all([stop(stack.temporal), stop(stack.s3), stop(stack.model)]);
  const admin = new Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS "${stack.database}" WITH (FORCE)`);
  await admin.end();
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const force = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(force);
}
