import type { Migration } from '../migrate';

/**
 * A schedule pauses itself (domain/schedules.ts): after SCHEDULE_PAUSE_AFTER_FAILURES firings in a
 * row that could not run, or at once when its creator can no longer run agents. `failures_in_a_row`
 * counts the firings since the last that started; `paused_reason` says why it paused itself (null
 * when a caller paused it, or it runs).
 */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query(`
    ALTER TABLE schedules
      ADD COLUMN failures_in_a_row integer NOT NULL DEFAULT 0,
      ADD COLUMN paused_reason jsonb;
  `);
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE schedules DROP COLUMN failures_in_a_row, DROP COLUMN paused_reason');
};
