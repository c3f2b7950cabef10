import type { Migration } from '../migrate';

/**
 * Who started a delivery's workflow: a dispatcher claims a delivery here (one claim per generation)
 * before it starts the workflow, so two deployments in two Temporal namespaces on one database never
 * both send it. The claim names the namespace, so only that namespace's dispatcher may start it again
 * after a crash between the claim and the start (the start is idempotent only within a namespace).
 */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query(`
    ALTER TABLE webhook_deliveries ADD COLUMN claimed_by text, ADD COLUMN claimed_at timestamptz;
    CREATE INDEX webhook_deliveries_claimed ON webhook_deliveries (claimed_by, claimed_at) WHERE started AND status = 'pending';
  `);
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query('DROP INDEX webhook_deliveries_claimed; ALTER TABLE webhook_deliveries DROP COLUMN claimed_by, DROP COLUMN claimed_at');
};
