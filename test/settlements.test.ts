import type { WorkflowHandle } from '@temporalio/client';
import { RunEvents } from '../activities/runEvents';
import { listenForSettlement, outcomeOf } from '../runs/settlements';
import { mintId } from '../domain/ids';
import type { RunOutcome } from '../domain/runs';
import { closeAll, until } from './support/stack';

afterAll(closeAll);

function outcomeFor(runId: string): RunOutcome {
  const usage = { input_tokens: 3, output_tokens: 2, total_tokens: 5, cached_tokens: 0 };
  return { run: { id: runId, status: 'completed', agent: 'agt_x', agent_version: 1, output: [{ type: 'text', text: 'hi' }], usage, metadata: {}, request_id: 'req_x', trace_id: 't' } };
}

/** A run's workflow as the answer sees it: described (open until `closed`), and asked for its result through `result`. */
function workflow(result: () => Promise<RunOutcome>, closed = true): { handle: WorkflowHandle; asked: () => number; described: () => number } {
  let asked = 0;
  let described = 0;
  const handle = {
    describe: async () => {
      described++;
      return { status: { name: closed ? 'COMPLETED' : 'RUNNING' } };
    },
    result: () => {
      asked++;
      return result();
    },
  } as unknown as WorkflowHandle;
  return { handle, asked: () => asked, described: () => described };
}

describe("a run's answer", () => {
  it('is the settlement its worker announces, and the workflow is not asked', async () => {
    const runId = mintId('run');
    const settlement = listenForSettlement(runId);
    try {
      expect(await settlement.ready).toBe(true);
      const { handle, asked } = workflow(() => new Promise(() => undefined), false);
      const stream = new RunEvents(runId);
      stream.announceSettlement(outcomeFor(runId));
      await stream.flush();
      expect(await outcomeOf(handle, settlement)).toEqual(outcomeFor(runId));
      expect(asked()).toBe(0);
    } finally {
      settlement.stop();
    }
  });

  it("is the workflow's outcome when no settlement is announced (the settling worker died before announcing it)", async () => {
    const runId = mintId('run');
    const settlement = listenForSettlement(runId);
    try {
      expect(await settlement.ready).toBe(true);
      const { handle, asked } = workflow(async () => outcomeFor(runId));
      expect(await outcomeOf(handle, settlement, { firstAskMs: 0 })).toEqual(outcomeFor(runId));
      expect(asked()).toBe(1);
    } finally {
      settlement.stop();
    }
  });

  it("hears only its own run's settlement", async () => {
    const [mine, other] = [mintId('run'), mintId('run')];
    const settlement = listenForSettlement(mine);
    try {
      await settlement.ready;
      const stream = new RunEvents(other);
      stream.announceSettlement(outcomeFor(other));
      await stream.flush();
      const { handle } = workflow(async () => outcomeFor(mine));
      expect((await outcomeOf(handle, settlement)).run.id).toBe(mine);
    } finally {
      settlement.stop();
    }
  });

  it('asks an open workflow whether it closed, without long-polling its result, and asks nothing once stopped', async () => {
    const runId = mintId('run');
    const settlement = listenForSettlement(runId);
    const { handle, asked, described } = workflow(async () => outcomeFor(runId), false);
    const answered = jest.fn();
    void outcomeOf(handle, settlement, { firstAskMs: 0 }).then(answered);
    await until(async () => (described() >= 1 ? true : undefined), 'the first ask');
    settlement.stop();
    // Stopped before the next ask (seconds later): the answer never comes from the workflow.
    await new Promise((resolve) => setImmediate(resolve));
    expect(asked()).toBe(0);
    expect(answered).not.toHaveBeenCalled();
  });

  it('asks nothing of a workflow whose run was heard from since the last ask (its stream moved), and asks once it goes quiet', async () => {
    const runId = mintId('run');
    const settlement = listenForSettlement(runId);
    try {
      const { handle, asked, described } = workflow(async () => outcomeFor(runId));
      let streaming = true;
      const heardAt = jest.fn(() => (streaming ? Date.now() : 0));
      const answer = outcomeOf(handle, settlement, { firstAskMs: 0, heardAt });
      await until(async () => (heardAt.mock.calls.length >= 1 ? true : undefined), 'the first look at the stream');
      expect(described()).toBe(0);
      streaming = false;
      expect(await answer).toEqual(outcomeFor(runId));
      expect([described(), asked()]).toEqual([1, 1]);
    } finally {
      settlement.stop();
    }
  });

  it("is heard by every listener of the run in this process, until the last one stops; a stream's news reaches its relay", async () => {
    const runId = mintId('run');
    const moved = jest.fn();
    const [waiter, relay] = [listenForSettlement(runId), listenForSettlement(runId, moved)];
    try {
      await Promise.all([waiter.ready, relay.ready]);
      waiter.stop();
      const stream = new RunEvents(runId);
      stream.emit('response.started', { id: runId });
      stream.announceSettlement(outcomeFor(runId));
      await stream.flush();
      const { handle } = workflow(() => new Promise(() => undefined), false);
      expect(await outcomeOf(handle, relay)).toEqual(outcomeFor(runId));
      expect(moved).toHaveBeenCalledTimes(1);
    } finally {
      relay.stop();
    }
  });
});
