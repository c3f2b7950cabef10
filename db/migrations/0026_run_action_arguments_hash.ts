import type { Migration } from '../migrate';

/**
 * An approval shows the call's arguments, and binds the decision to them: the SHA-256 of the
 * arguments the approver was shown (domain/actions.ts). Calls recorded before have none, and are
 * approved as before.
 */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE run_actions ADD COLUMN arguments_sha256 text');
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE run_actions DROP COLUMN arguments_sha256');
};
