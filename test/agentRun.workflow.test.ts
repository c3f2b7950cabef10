import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import type { Settlement, StartRun } from '../activities/runs';
import type { GenerateInput, GenerateResult } from '../activities/model';
import type { AgentConfig } from '../domain/agents';
import type { RunInput, RunOptions, RunOutcome } from '../domain/runs';
import { MAX_TOOL_ROUNDS } from '../domain/tools';
import { installRuntime } from '../workers/worker';
import { workflowBundle, workflowSinks } from '../workers/workflowBundle';

/**
 * agentRun on its own: its activities stubbed, so the state machine (tool rounds, handoff, repair,
 * deadline, cancel) is tested in seconds, without a database, Redis or a model provider.
 */
let env: TestWorkflowEnvironment;
beforeAll(async () => {
  installRuntime();
  env = await TestWorkflowEnvironment.createFromExistingServer({ address: process.env.TEMPORAL_ADDRESS });
});
afterAll(() => env?.teardown());

type ModelCall = Omit<GenerateInput, 'runId' | 'config' | 'input' | 'attachments' | 'historyFrom'>;
type Reply = Partial<GenerateResult>;

function inputWith(options: Partial<RunOptions> = {}, config: AgentConfig = {}): RunInput {
  return {
    runId: `run_unit_${randomUUID()}`, kind: 'response', requestId: 'req_unit', traceId: 'trace_unit',
    workspace: { id: 1, publicId: 'ws_unit', tenantRef: null, partnerPublicId: null },
    agent: { id: 1, publicId: 'agt_unit', version: 1, config },
    input: 'hi', attachments: [], channel: 'api', metadata: {}, requestContext: {}, acceptedAt: 0,
    options: { knowledgePolicy: 'auto', memoryPolicy: 'auto', toolPolicy: 'auto', preview: false, stream: false, timeoutMs: 60_000, responseFormat: { type: 'text' }, ...options },
  };
}

const LOOKUP = { type: 'http' as const, name: 'lookup', url: 'https://tools.example/lookup', parameters: { type: 'object' } };
const toolCall = (name: string, args = '{}') => ({ toolCalls: [{ id: `call_${randomUUID()}`, name, arguments: args }] });

/** The stubbed activities: each model call answers the next reply; everything the workflow asks is recorded. */
function stubbed(replies: Reply[], firstCall?: (call: ModelCall) => Promise<void>) {
  const seen = { calls: [] as ModelCall[], tools: [] as string[], events: [] as string[], settlement: undefined as Settlement | undefined, cancelRecorded: false };
  const answer = async (call: ModelCall): Promise<GenerateResult> => {
    seen.calls.push(call);
    return { text: '', toolCalls: [], usage: { input_tokens: 3, output_tokens: 2, total_tokens: 5, cached_tokens: 0 }, model: 'stub', check: { ok: true, value: undefined }, ...replies.shift() };
  };
  const activities = {
    async startRun(s: StartRun) {
      await firstCall?.(s.call);
      return { ...(await answer(s.call)), begun: { runKey: 1, conversationId: 1, conversationChannel: '' } };
    },
    generate: (call: GenerateInput) => answer(call),
    async callTool(call: { tool: { name: string } }) {
      seen.tools.push(call.tool.name);
      return '{"state":"shipped"}';
    },
    async emitRunEvent(_runId: string, type: string) {
      seen.events.push(type);
    },
    async recordRunCancel() {
      seen.cancelRecorded = true;
    },
    async settleRun(s: Settlement): Promise<RunOutcome> {
      seen.settlement = s;
      const run = { id: s.input.runId, status: s.status, agent: 'agt_unit', agent_version: 1, output: s.output, usage: s.usage, metadata: {}, request_id: 'req_unit', trace_id: 'trace_unit' };
      return { run, ...(s.error && { error: s.error }) };
    },
  };
  return { seen, activities };
}

async function runWorkflow(input: RunInput, activities: object, whileRunning?: (runId: string) => Promise<void>): Promise<RunOutcome> {
  const taskQueue = `unit-${randomUUID()}`;
  const worker = await Worker.create({ connection: env.nativeConnection, taskQueue, workflowBundle: await workflowBundle(require.resolve('../workflows')), sinks: workflowSinks(), activities });
  return worker.runUntil(async () => {
    const handle = await env.client.workflow.start('agentRun', { taskQueue, workflowId: input.runId, args: [input] });
    await whileRunning?.(input.runId);
    return handle.result();
  });
}

const SCHEMA_FORMAT = { type: 'json_schema' as const, schema: { type: 'object' }, strict: true as const };

describe('agentRun, activities stubbed', () => {
  it('repairs a structured answer once, stating the problems, and answers the repaired value', async () => {
    const { seen, activities } = stubbed([
      { text: '{"wrong":1}', check: { ok: false, paths: ['/answer'], problems: ['/answer is required'] } },
      { text: '{"answer":"yes"}', check: { ok: true, value: { answer: 'yes' } } },
    ]);
    const outcome = await runWorkflow(inputWith({ responseFormat: SCHEMA_FORMAT }), activities);
    expect(outcome.run.status).toBe('completed');
    expect(seen.settlement?.output).toEqual([{ type: 'json', json: { answer: 'yes' } }]);
    expect(seen.calls.map((c) => c.repair)).toEqual([undefined, { previous: '{"wrong":1}', problems: ['/answer is required'] }]);
  });

  it('fails structured_output_failed naming the paths when the one repair is still wrong: two calls, no more', async () => {
    const wrong = { text: '{}', check: { ok: false as const, paths: ['/answer'], problems: ['/answer is required'] } };
    const { seen, activities } = stubbed([wrong, wrong, wrong]);
    const outcome = await runWorkflow(inputWith({ responseFormat: SCHEMA_FORMAT }), activities);
    expect(outcome.error).toEqual({ code: 'structured_output_failed', message: 'The reply did not match the schema at: /answer' });
    expect(seen.calls).toHaveLength(2);
  });

  it('takes tool rounds: each call is an activity, its result goes back to the model, then the model answers', async () => {
    const { seen, activities } = stubbed([toolCall('lookup'), toolCall('lookup'), { text: 'shipped' }]);
    const outcome = await runWorkflow(inputWith({}, { tools: [LOOKUP] }), activities);
    expect(seen.settlement).toMatchObject({ status: 'completed', output: [{ type: 'text', text: 'shipped' }], toolNames: ['lookup', 'lookup'] });
    expect(outcome.run.status).toBe('completed');
    expect(seen.tools).toEqual(['lookup', 'lookup']);
    // The third call carries both rounds: the model's call and the tool's result, twice.
    expect(seen.calls[2].toolTurns.map((t) => t.role)).toEqual(['assistant', 'tool', 'assistant', 'tool']);
  });

  it('ends at its model calls, completed and incomplete, keeping what the model said: no call after the limit', async () => {
    const replies = Array.from({ length: 20 }, (_, i) => ({ ...toolCall('lookup'), text: `step ${i + 1}` }));
    const { seen, activities } = stubbed(replies);
    const outcome = await runWorkflow({ ...inputWith({}, { tools: [LOOKUP] }), limits: { max_model_calls: 5 } }, activities);
    expect(outcome.error).toBeUndefined();
    expect(seen.calls).toHaveLength(5);
    // The fifth reply's call is not made: no model call could read its result.
    expect(seen.tools).toHaveLength(4);
    expect(seen.settlement).toMatchObject({ status: 'completed', incomplete: 'max_model_calls', output: [{ type: 'text', text: ['step 1', 'step 2', 'step 3', 'step 4', 'step 5'].join('\n\n') }] });
  });

  it('ends at a reply whose calls would pass max_tool_calls, making none of them (parallel calls counted)', async () => {
    const two = { toolCalls: [0, 1].map((n) => ({ id: `call_${n}`, name: 'lookup', arguments: '{}' })) };
    const { seen, activities } = stubbed([two, two, { text: 'never asked' }]);
    await runWorkflow({ ...inputWith({}, { tools: [LOOKUP] }), limits: { max_model_calls: 16, max_tool_calls: 3 } }, activities);
    expect(seen.tools).toHaveLength(2);
    expect(seen.calls).toHaveLength(2);
    expect(seen.settlement).toMatchObject({ status: 'completed', incomplete: 'max_tool_calls', output: [] });
  });

  it('ends once its credits or its output tokens are spent, before the next call', async () => {
    const credits = stubbed(Array.from({ length: 10 }, () => toolCall('lookup')));
    // Each call uses 5 credits: at 12, the third call (15 spent) is the last.
    await runWorkflow({ ...inputWith({}, { tools: [LOOKUP] }), limits: { max_model_calls: 16, max_run_credits: 12 } }, credits.activities);
    expect(credits.seen.calls).toHaveLength(3);
    expect(credits.seen.tools).toHaveLength(2);
    expect(credits.seen.settlement).toMatchObject({ status: 'completed', incomplete: 'max_run_credits' });
    const output = stubbed(Array.from({ length: 10 }, () => toolCall('lookup')));
    // Each call writes 2 tokens: at 4, the second call is the last.
    await runWorkflow({ ...inputWith({}, { tools: [LOOKUP] }), limits: { max_model_calls: 16, max_output_tokens_total: 4 } }, output.activities);
    expect(output.seen.calls).toHaveLength(2);
    expect(output.seen.settlement).toMatchObject({ status: 'completed', incomplete: 'max_output_tokens_total' });
  });

  it(`a run planned before limits makes the calls its hold counted (the first, ${MAX_TOOL_ROUNDS} tool rounds, the repair), then ends`, async () => {
    const { seen, activities } = stubbed(Array.from({ length: 12 }, () => toolCall('lookup')));
    const outcome = await runWorkflow(inputWith({}, { tools: [LOOKUP] }), activities);
    expect(outcome.error).toBeUndefined();
    expect(seen.calls).toHaveLength(MAX_TOOL_ROUNDS + 2);
    expect(seen.settlement).toMatchObject({ status: 'completed', incomplete: 'max_model_calls' });
  });

  it('hands off: the assistant stops, the handoff is an output item and goes to the settlement', async () => {
    const { seen, activities } = stubbed([toolCall('handoff', '{"reason":"a refund over the limit"}')]);
    await runWorkflow(inputWith({}, { tools: [{ type: 'handoff' }] }), activities);
    expect(seen.settlement).toMatchObject({ status: 'completed', output: [{ type: 'handoff', text: 'a refund over the limit' }], handoff: { reason: 'a refund over the limit' } });
    expect(seen.events).toEqual(['response.tool.started', 'response.tool.completed']);
    expect(seen.calls).toHaveLength(1);
  });

  it('fails at the deadline: no call starts once timeout_ms has passed', async () => {
    // The first call outlasts the whole timeout and asks for a tool; the tool must not run.
    const { seen, activities } = stubbed([toolCall('lookup')], () => new Promise((r) => setTimeout(r, 1_200)));
    const outcome = await runWorkflow(inputWith({ timeoutMs: 1_000 }, { tools: [LOOKUP] }), activities);
    expect(outcome.error).toEqual({ code: 'provider_unavailable', message: 'The run did not finish within timeout_ms (1000 ms).' });
    expect(outcome.run.status).toBe('failed');
    expect(seen.tools).toEqual([]);
  });

  it('settles once as cancelled when cancelled mid-call, and the call sees the cancellation', async () => {
    let callCancelled = false;
    let started: () => void;
    const callStarted = new Promise<void>((resolve) => (started = resolve));
    const { seen, activities } = stubbed([], async () => {
      started();
      const ctx = Context.current();
      try {
        for (;;) {
          ctx.heartbeat();
          await ctx.sleep(100);
        }
      } catch (err) {
        callCancelled = true;
        throw err;
      }
    });
    const outcome = await runWorkflow(inputWith(), activities, async (runId) => {
      await callStarted;
      await env.client.workflow.getHandle(runId).cancel();
    });
    expect(outcome.run.status).toBe('cancelled');
    expect(seen.settlement?.status).toBe('cancelled');
    expect(seen.cancelRecorded).toBe(true);
    expect(callCancelled).toBe(true);
  });

  it('fails knowledge_unavailable without a model call when retrieval keeps failing, after its retries', async () => {
    const { seen, activities } = stubbed([{ text: 'an unretrieved answer' }]);
    let attempts = 0;
    const outcome = await runWorkflow(inputWith({}, { knowledge: { collections: ['handbook'] } }), {
      ...activities,
      async retrieveKnowledge() {
        attempts++;
        throw new Error('connection refused');
      },
    });
    expect(outcome.error?.code).toBe('knowledge_unavailable');
    expect(outcome.run.status).toBe('failed');
    expect(attempts).toBe(3);
    expect(seen.calls).toEqual([]);
  });

  it('sends the retrieved passages with every model call of the run and records their ids and ranks', async () => {
    const passage = { chunk: 'chk_unit', document: 'doc_unit', name: 'handbook.txt', rank: 1, text: 'Returns within 30 days.' };
    const { seen, activities } = stubbed([toolCall('lookup'), { text: 'answered' }]);
    const outcome = await runWorkflow(inputWith({}, { tools: [LOOKUP], knowledge: { collections: ['handbook'] } }), { ...activities, retrieveKnowledge: async () => [passage] });
    expect(outcome.run.status).toBe('completed');
    expect(seen.calls.map((c) => c.knowledge)).toEqual([[passage], [passage]]);
    expect(seen.settlement?.knowledge).toEqual([{ chunk: 'chk_unit', document: 'doc_unit', rank: 1 }]);
  });
});
