import type { Migration } from '../migrate';

/**
 * Two marks on a run's log entry (metadata only): the model refused (the run's output is a refusal
 * item), and the usage was counted by the service because the provider reported none.
 */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE run_logs ADD COLUMN refused boolean NOT NULL DEFAULT false, ADD COLUMN usage_estimated boolean NOT NULL DEFAULT false');
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE run_logs DROP COLUMN refused, DROP COLUMN usage_estimated');
};
