import type { Migration } from '../migrate';

/**
 * What a run cost beyond what it reserved: a run is never charged more than its reservation (a
 * balance never goes below zero), and the part left uncharged is said in its log entry, not lost silently.
 */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE run_logs ADD COLUMN uncharged_credits bigint NOT NULL DEFAULT 0');
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE run_logs DROP COLUMN uncharged_credits');
};
