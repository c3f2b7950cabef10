import type { WorkflowHandle } from '@temporalio/client';
import { watchCancel } from '../activities/cancelNotices';
import { cancelRun } from '../runs/cancelRun';
import { mintId } from '../domain/ids';
import { closeAll, until } from './support/stack';

afterAll(closeAll);

/** A run's workflow as cancelRun sees it: cancelled through `cancel`, counted. */
function workflow(): { handle: WorkflowHandle; cancels: () => number } {
  let cancels = 0;
  const handle = { cancel: async () => void cancels++ } as unknown as WorkflowHandle;
  return { handle, cancels: () => cancels };
}

describe("a run's cancel announcement", () => {
  it("reaches the model call of that run at once, after its workflow's cancel, and no other run's call", async () => {
    const [runId, other] = [mintId('run'), mintId('run')];
    const mine = watchCancel(runId);
    const theirs = watchCancel(other);
    try {
      // The first watcher subscribes; a cancel announced before that is in place would go unheard.
      await mine.listening;
      const { handle, cancels } = workflow();
      await cancelRun(handle, runId);
      expect(cancels()).toBe(1);
      await until(async () => (mine.signal.aborted ? true : undefined), 'the call to hear its cancel');
      expect(theirs.signal.aborted).toBe(false);
    } finally {
      mine.release();
      theirs.release();
    }
  });
});
