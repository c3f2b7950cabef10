import type { Migration } from '../migrate';

/** When the reconciler settled a run its workflow left open: one of the lists of runs that need attention. */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE runs ADD COLUMN reconciled_at timestamptz');
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE runs DROP COLUMN reconciled_at');
};
