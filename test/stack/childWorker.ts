import { serveUntilSignalled } from '../../workers/main';

/**
 * A worker process of its own, exactly as `npm run start:worker` runs (signals, drain, exit), on the
 * task queue named in argv, so a test can kill or SIGTERM it. Run compiled (dist/), as npm test builds it.
 */
serveUntilSignalled([process.argv[2]], () => process.send?.('ready'));
