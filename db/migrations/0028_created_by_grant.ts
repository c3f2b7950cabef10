import type { Migration } from '../migrate';

/**
 * Work created through an OAuth access token (schedules, jobs) remembers the grant the token came
 * from: once that grant is revoked, the work no longer runs on the member's behalf (domain/creators.ts).
 */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE schedules ADD COLUMN created_by_grant text');
  await context.sequelize.query('ALTER TABLE jobs ADD COLUMN created_by_grant text');
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE schedules DROP COLUMN created_by_grant');
  await context.sequelize.query('ALTER TABLE jobs DROP COLUMN created_by_grant');
};
