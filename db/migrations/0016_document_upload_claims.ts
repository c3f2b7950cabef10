import type { Migration } from '../migrate';

/**
 * When a document's upload began: one upload at a time per document (an upload grant redeemed by many
 * requests at once would otherwise have each stream into storage before all but one are removed).
 */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE documents ADD COLUMN upload_started_at timestamptz');
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE documents DROP COLUMN upload_started_at');
};
