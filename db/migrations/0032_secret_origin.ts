import type { Migration } from '../migrate';

/** The one origin a workspace secret is sent to: given when it is set, or its first use's (docs/api.md, "Secrets"). */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE workspace_secrets ADD COLUMN origin text');
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE workspace_secrets DROP COLUMN origin');
};
