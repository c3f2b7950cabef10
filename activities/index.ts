export { generate } from './model';
export { beginRun, settleRun } from './runs';
export { callTool, emitRunEvent } from './tools';
