export { agentRun } from './agentRun';
export { reconcileRuns } from './reconcileRuns';
