export { generate } from './model';
export { beginRun, settleRun } from './runs';
