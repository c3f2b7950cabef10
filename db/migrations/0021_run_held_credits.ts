import type { Migration } from '../migrate';

/** What a run held (its credit reservation) once it has settled, beside what it was charged: the dashboard's run page shows both. */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE runs ADD COLUMN held_credits bigint');
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE runs DROP COLUMN held_credits');
};
