import type { Migration } from '../migrate';

/**
 * Cancels asked of runs, recorded by the run's workflow the moment it is cancelled
 * (db/runCancelRequests.ts). A run's first model call settles the run itself when its reply ends it,
 * and does so only if no cancel was recorded first, so a cancel that reaches the workflow before the
 * reply still ends the run cancelled.
 */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query(`
    CREATE TABLE run_cancel_requests (
      run_public_id  text PRIMARY KEY,
      requested_at   timestamptz NOT NULL DEFAULT now()
    );
  `);
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query('DROP TABLE run_cancel_requests');
};
