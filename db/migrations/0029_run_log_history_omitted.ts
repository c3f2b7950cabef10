import type { Migration } from '../migrate';

/** How many earlier messages a conversation's run left out to fit the model's window (docs/api.md, "Memory"). */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE run_logs ADD COLUMN history_omitted integer NOT NULL DEFAULT 0');
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE run_logs DROP COLUMN history_omitted');
};
