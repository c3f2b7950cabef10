export { agentRun } from './agentRun';
export { extraction } from './extraction';
export { job } from './job';
export { knowledgeIngestion } from './knowledgeIngestion';
export { reconcileRuns } from './reconcileRuns';
export { report } from './report';
