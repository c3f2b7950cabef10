import type { Migration } from '../migrate';

/**
 * GET /api/v2/runs' filters, indexed: a page filtered by creation time or by status no longer walks
 * the workspace's whole history by id (db/runs.ts bounds what one page may scan besides). Built
 * CONCURRENTLY (a migration here is no transaction), so runs are written meanwhile.
 */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query('CREATE INDEX CONCURRENTLY IF NOT EXISTS runs_workspace_created ON runs (workspace_id, created_at)');
  await context.sequelize.query('CREATE INDEX CONCURRENTLY IF NOT EXISTS runs_workspace_status ON runs (workspace_id, status, id)');
  await context.sequelize.query('CREATE INDEX CONCURRENTLY IF NOT EXISTS runs_workspace_reconciled ON runs (workspace_id, id) WHERE reconciled_at IS NOT NULL');
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query('DROP INDEX IF EXISTS runs_workspace_created, runs_workspace_status, runs_workspace_reconciled');
};
