import { workflowBundle } from '../workers/workflowBundle';

/**
 * The workflow bundle holds the workflows and the pure domain code they use, never activity code,
 * clients or infrastructure: workflows import activities as types only, and of workflowClients/ only
 * what a starter and its workflow share (queues, summaries, a run's start options and messages) and
 * their signatures' types; the .client modules themselves (the activities' way to a workflow) stay out.
 */
describe('the workflow bundle', () => {
  it('holds only workflows/, domain/ and the shared declarations of workflowClients/', async () => {
    const bundle = await workflowBundle(require.resolve('../workflows'), false);
    const code = 'code' in bundle ? bundle.code : '';
    const ours = [...new Set([...code.matchAll(/^\/\*\*\*\/ "\.\/([^"]+)"/gm)].map((m) => m[1]).filter((path) => !path.startsWith('node_modules/')))];
    expect(ours).toContain('workflows/agentRun.ts');
    const shared = /^workflowClients\/(registry|summaries|agentRun\.options)\.ts$/;
    expect(ours.filter((path) => !/^(workflows|domain)\//.test(path) && !shared.test(path))).toEqual([]);
  });
});
