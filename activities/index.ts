export { generate } from './model';
export { settleRun, startRun } from './runs';
export { callTool, emitRunEvent } from './tools';
export { failUnstartedWork, settleAbandonedRuns } from './reconcile';
export { beginIngestion, completeIngestion, failIngestion, indexDocument } from './knowledge';
export { retrieveKnowledge } from './retrieval';
export { reportSettled, reportStarted } from './reports';
export { beginExtraction, extractionProgress, holdSegmentCredits, settleExtraction } from './extractions';
export { awaitIngestion, finishJob, finishJobItem, jobWindow, startJobItem } from './jobs';
