import { startWorkers } from '../../workers/worker';

/** A worker in a process of its own, on the task queue named in argv, so a test can kill it. */
startWorkers([process.argv[2]]).then(() => process.send?.('ready'));
