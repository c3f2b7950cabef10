import type { Migration } from '../migrate';

/** Usage of model calls cut short (cancelled, timed out), which the provider never reported but billed. */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE runs ADD COLUMN consumed_usage jsonb');
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE runs DROP COLUMN consumed_usage');
};
