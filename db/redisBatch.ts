import type { ChainableCommander } from 'ioredis';
import { redis } from '../infra/redis';

type Replies = [Error | null, unknown][];

let open: { pipeline: ChainableCommander; sent: Promise<Replies> } | undefined;

/**
 * Queues commands to go to Redis with every other command queued in this turn of the event loop, as
 * one pipeline on the process's connection, in the order they were queued; resolves with the replies
 * to these commands, or rejects with the first error among them. A busy worker reads the chunks of
 * many provider streams in one turn, and writing each chunk's append to the socket on its own was
 * most of what the append cost (docs/performance.md); idle, a batch is one command and waits for
 * nothing but the end of the turn.
 */
export function inTurnBatch(queue: (pipeline: ChainableCommander) => void): Promise<unknown[]> {
  const batch = (open ??= startBatch());
  const from = batch.pipeline.length;
  queue(batch.pipeline);
  const to = batch.pipeline.length;
  return batch.sent.then((replies) =>
    replies.slice(from, to).map(([err, reply]) => {
      if (err) throw err;
      return reply;
    }),
  );
}

function startBatch(): { pipeline: ChainableCommander; sent: Promise<Replies> } {
  const pipeline = redis().pipeline();
  const sent = new Promise<Replies>((resolve, reject) =>
    setImmediate(() => {
      open = undefined;
      pipeline.exec().then((replies) => resolve(replies ?? []), reject);
    }),
  );
  return { pipeline, sent };
}
