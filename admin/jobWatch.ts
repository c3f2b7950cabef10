import { SingleBar } from 'cli-progress';
import { jobObject } from '../domain/jobRecord';
import { jobById, jobCounts } from '../db/jobs';
import { AdminError } from './commands';

const ENDED = new Set(['completed', 'failed', 'cancelled']);

/**
 * `admin job watch --job ID`: a progress bar on stderr, redrawn as the job's items finish, until the
 * job ends; then the job's record on stdout, like every admin command.
 */
export async function watchJob(o: { job: string; intervalMs?: number }): Promise<Record<string, unknown>> {
  const bar = new SingleBar({
    stream: process.stderr,
    format: '{bar} {percentage}% | {value}/{total} items | {status} | running {running}, failed {failed}, cancelled {cancelled}',
    // Where stderr is not a terminal (CI, a pipe), a line every few seconds instead of redrawing.
    noTTYOutput: true,
    notTTYSchedule: 2000,
    hideCursor: true,
  });
  let started = false;
  try {
    for (;;) {
      const job = await jobById(o.job);
      if (!job) throw new AdminError(`no job ${o.job}`);
      const counts = await jobCounts(job.id);
      const done = counts.completed + counts.failed + counts.cancelled;
      const payload = { status: job.status, running: counts.running, failed: counts.failed, cancelled: counts.cancelled };
      if (!started) bar.start(job.items_total, done, payload);
      else bar.update(done, payload);
      started = true;
      if (ENDED.has(job.status)) return jobObject(job, counts);
      await new Promise((r) => setTimeout(r, o.intervalMs ?? 500));
    }
  } finally {
    if (started) bar.stop();
  }
}
