import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { dataConverter } from '../infra/payloadCodec';
import { startRun } from '../workflowClients/agentRun.client';
import { MCP_MAX_LISTING_BYTES, MCP_MAX_TOOLS } from '../infra/mcpSessions';
import { MAX_TOOL_ANSWER_BYTES } from '../domain/tools';
import { runInputFor, scriptModel, tenant } from './support/stack';
import { hostileMcpServer, type HostileBehaviour, type HostileServer } from './support/hostileMcp';

/**
 * Issue 56, point 1: an MCP server a tenant configures sends what it likes. Each hostile server below
 * once held its runs past their timeout and drove the shared worker out of heap. Here the runs go to a
 * worker process of their own, with the heap limit `npm run start:worker` gives a worker, so its heap
 * and its survival can be read; another workspace's plain run on the same worker completes meanwhile.
 */
const CHILD = path.join(__dirname, '../dist/test/stack/childWorker.js');
const WORKER_HEAP_MB = 192;
const queue = `hostile-mcp-${Date.now()}`;
let client: Client;
let worker: ChildProcess;
let hostile: HostileServer;

beforeAll(async () => {
  if (!existsSync(CHILD)) throw new Error(`${CHILD} is missing: run npm run build first (npm test does)`);
  client = new Client({ connection: await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! }), dataConverter });
  hostile = await hostileMcpServer();
  worker = fork(CHILD, [queue], { execArgv: [`--max-old-space-size=${WORKER_HEAP_MB}`], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  await new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    worker.once('exit', (code) => reject(new Error(`worker process exited with ${code}`)));
  });
});
afterAll(async () => {
  worker?.kill('SIGKILL');
  await hostile?.close();
  await client?.connection.close();
});

const heap = () =>
  new Promise<{ used: number; limit: number }>((resolve) => {
    worker.once('message', (m) => resolve(m as { used: number; limit: number }));
    worker.send('heap');
  });

/** A run of an agent whose one MCP server behaves as named, with the tools required, on the hostile worker's queue. */
async function hostileRun(behaviour: HostileBehaviour) {
  const t = await tenant();
  // Only the endless result gets as far as a tool call.
  await scriptModel(t.model, [{ toolCalls: [{ name: 'hostile__echo', arguments: '{}' }] }, { text: 'unreachable' }]);
  const config = { model: t.model, tools: [{ type: 'mcp' as const, server_label: 'hostile', server_url: `${hostile.url}/${behaviour}/mcp` }] };
  const input = await runInputFor(t, { options: { toolPolicy: 'required', timeoutMs: 20_000 } });
  return (await startRun(client, { ...input, agent: { ...input.agent, config } }, { taskQueue: queue })).result();
}

/** Another workspace's plain run on the same worker. */
async function neighbourRun() {
  const t = await tenant();
  await scriptModel(t.model, [{ text: 'Unbothered.' }]);
  return (await startRun(client, await runInputFor(t), { taskQueue: queue })).result();
}

describe('a hostile MCP server meets caps, and the shared worker never notices', () => {
  it.each([
    // A listing's line may be as long as a listing: the stream's cap or the line's trips first.
    ['never ends an event-stream line', 'endless-line', `${MCP_MAX_LISTING_BYTES} bytes`],
    ['sends a 300 MB JSON listing', 'huge-listing', `answer passed ${MCP_MAX_LISTING_BYTES} bytes`],
    ['lists 10,000 tools', 'many-tools', `more than ${MCP_MAX_TOOLS} tools`],
    ['answers a tools/call with an endless result', 'endless-result', `answer passed ${MAX_TOOL_ANSWER_BYTES} bytes`],
    ['answers a tools/call with an endless event-stream line', 'endless-result-line', `line past ${MAX_TOOL_ANSWER_BYTES} bytes`],
  ] as const)('a server that %s is cut off: the run fails tool_execution_failed, the server is hung up on', async (_, behaviour, why) => {
    const [outcome, neighbour] = await Promise.all([hostileRun(behaviour), neighbourRun()]);
    expect(outcome).toMatchObject({ run: { status: 'failed' }, error: { code: 'tool_execution_failed', message: expect.stringContaining(why) } });
    expect(neighbour.run).toMatchObject({ status: 'completed', output: [{ type: 'text', text: 'Unbothered.' }] });
    const sent = hostile.sent.get(behaviour)!;
    // Read no further than the cap (and what the sockets buffer), not for the whole budget: then hung up on.
    expect(sent.bytes).toBeLessThan(16 * 1024 * 1024);
    if (behaviour !== 'many-tools') expect(sent.cutOff).toBe(true);
    expect(worker.exitCode).toBeNull();
    const { used, limit } = await heap();
    expect(limit).toBeLessThanOrEqual((WORKER_HEAP_MB + 64) * 1024 * 1024);
    expect(used).toBeLessThan(limit / 2);
  });
});
