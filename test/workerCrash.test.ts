import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { QueryTypes } from 'sequelize';
import { mintId, mintTraceId } from '../domain/ids';
import type { RunInput } from '../domain/runs';
import { db } from '../db/sequelize';
import { startWorkers, type RunningWorkers } from '../workers/worker';
import { scriptModel, tenant, until, useApi } from './support/stack';
import { frames, openStream, TERMINALS, type Frame } from './support/sse';

const api = useApi();
let child: ChildProcess | undefined;
let replacement: RunningWorkers | undefined;
let client: Client;

beforeAll(async () => {
  client = new Client({ connection: await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! }) });
});
afterAll(async () => {
  child?.kill('SIGKILL');
  await replacement?.shutdown();
  await client.connection.close();
});

/** A worker process polling only `queue`, so this test decides which worker runs the run. */
async function workerProcess(queue: string): Promise<ChildProcess> {
  const worker = fork(path.join(__dirname, 'stack/childWorker.ts'), [queue], { execArgv: ['-r', '@swc-node/register'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  await new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    worker.once('exit', (code) => reject(new Error(`worker process exited with ${code}`)));
  });
  return worker;
}

it('ends the stream with exactly one terminal event, and no text twice, when the worker dies mid-stream', async () => {
  const t = await tenant({ scopes: ['responses:create'] });
  await scriptModel(t.model, [{ chunks: ['one ', 'two ', 'three ', 'four ', 'five '], chunkDelayMs: 700 }, { text: 'a second attempt would repeat the text' }]);
  const queue = `crash-${Date.now()}`;
  child = await workerProcess(queue);

  const [ws] = await db().query<{ id: number }>('SELECT id FROM workspaces WHERE public_id = :ws', { replacements: { ws: t.workspace }, type: QueryTypes.SELECT });
  const [agent] = await db().query<{ id: number }>('SELECT id FROM agents WHERE public_id = :a', { replacements: { a: t.agent }, type: QueryTypes.SELECT });
  const input: RunInput = {
    runId: mintId('run'), kind: 'response', requestId: mintId('request'), traceId: mintTraceId(),
    workspace: { id: ws.id, publicId: t.workspace, tenantRef: null, partnerPublicId: null },
    agent: { id: agent.id, publicId: t.agent, version: 1, config: { model: t.model } },
    input: 'hi', attachments: [], channel: 'api', metadata: {}, requestContext: {},
    options: { knowledgePolicy: 'auto', memoryPolicy: 'auto', toolPolicy: 'auto', preview: false, stream: true, timeoutMs: 60000, responseFormat: { type: 'text' } },
    acceptedAt: Date.now(),
  };
  await client.workflow.start('agentRun', { taskQueue: queue, workflowId: input.runId, args: [input] });
  await until(async () => {
    const [row] = await db().query('SELECT 1 FROM runs WHERE public_id = :id', { replacements: { id: input.runId }, type: QueryTypes.SELECT });
    return row;
  }, 'the run to begin');

  const seen: Frame[] = [];
  const res = await openStream(api.url, `/api/v2/runs/${input.runId}/events`, t.key);
  for await (const frame of frames(res)) {
    if (!frame.event) continue;
    seen.push(frame);
    if (frame.event === 'response.output_text.delta' && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      replacement = await startWorkers([queue]);
    }
  }

  const terminals = seen.filter((f) => TERMINALS.includes(f.event!));
  expect(terminals).toHaveLength(1);
  expect(seen.at(-1)).toMatchObject({ event: 'response.failed', data: { error: { code: 'provider_unavailable' }, status: 'failed' } });
  const deltas = seen.filter((f) => f.event === 'response.output_text.delta').map((f) => f.data.delta);
  expect(new Set(deltas).size).toBe(deltas.length);
  expect(deltas).not.toContain('a second attempt would repeat the text');
  const [run] = await db().query<{ status: string; lines: number }>(
    'SELECT r.status, (SELECT count(*)::int FROM ledger_lines l WHERE l.run_id = r.id) AS lines FROM runs r WHERE r.public_id = :id',
    { replacements: { id: input.runId }, type: QueryTypes.SELECT },
  );
  expect(run).toEqual({ status: 'failed', lines: 1 });
});
