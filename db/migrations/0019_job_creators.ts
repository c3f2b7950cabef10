import type { Migration } from '../migrate';

/**
 * Who created a job: an API key, or a dashboard member. Each item is checked against the creator's
 * scopes when it starts, so a job cannot run what its creator may not, and a revoked key stops its
 * job's unstarted items.
 */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE jobs ADD COLUMN created_by_key bigint REFERENCES api_keys(id), ADD COLUMN created_by_member bigint REFERENCES members(id)');
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE jobs DROP COLUMN created_by_key, DROP COLUMN created_by_member');
};
