import type { Migration } from '../migrate';

/** Why a completed run's answer is unfinished: `max_output_tokens` when it stopped at its output cap (docs/api.md, "Run response"). */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE runs ADD COLUMN incomplete_reason text');
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE runs DROP COLUMN incomplete_reason');
};
