export { agentRun } from './agentRun';
