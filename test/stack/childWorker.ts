import { getHeapStatistics } from 'node:v8';
import { serveUntilSignalled } from '../../workers/main';

/**
 * A worker process of its own, exactly as `npm run start:worker` runs (signals, drain, exit), on the
 * task queue named in argv, so a test can kill or SIGTERM it. Run compiled (dist/), as npm test builds it.
 * Asked 'heap', it answers its heap's size and limit (a test of what hostile servers cost a worker).
 */
serveUntilSignalled([process.argv[2]], () => process.send?.('ready'));
process.on('message', (message) => {
  if (message !== 'heap') return;
  const heap = getHeapStatistics();
  process.send?.({ used: heap.used_heap_size, limit: heap.heap_size_limit });
});
