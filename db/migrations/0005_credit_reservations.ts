import type { Migration } from '../migrate';

/**
 * A run's maximum cost, taken from its workspace's balance when the run is accepted (so concurrent
 * runs can never push a balance below zero) and given back, less the real cost, when it settles.
 */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query(`
    CREATE TABLE credit_reservations (
      run_public_id  text PRIMARY KEY,
      workspace_id   bigint NOT NULL REFERENCES workspaces(id),
      credits        bigint NOT NULL CHECK (credits >= 0),
      created_at     timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX credit_reservations_age ON credit_reservations (created_at);
  `);
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query('DROP TABLE credit_reservations');
};
