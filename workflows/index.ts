export { agentRun } from './agentRun';
export { knowledgeIngestion } from './knowledgeIngestion';
export { reconcileRuns } from './reconcileRuns';
export { report } from './report';
