import { workflowBundle } from '../workers/workflowBundle';

/**
 * The workflow bundle holds the workflows and the pure domain code they use, never activity code,
 * clients or infrastructure: workflows import activities as types only, and the activities reach
 * workflow starts through the .client modules, which no workflow imports.
 */
describe('the workflow bundle', () => {
  it('holds only workflows/ and domain/ modules of this repository', async () => {
    const bundle = await workflowBundle(require.resolve('../workflows'), false);
    const code = 'code' in bundle ? bundle.code : '';
    const ours = [...new Set([...code.matchAll(/^\/\*\*\*\/ "\.\/([^"]+)"/gm)].map((m) => m[1]).filter((path) => !path.startsWith('node_modules/')))];
    expect(ours).toContain('workflows/agentRun.ts');
    expect(ours.filter((path) => !/^(workflows|domain)\//.test(path))).toEqual([]);
    // The agentRun workflow's starter is not in it (the reconciler's activity imports it).
    expect(ours).not.toContain('workflows/agentRun.client.ts');
  });
});
