import type { Migration } from '../migrate';

/**
 * Workspace secrets: credentials an agent's tools use (an MCP server's bearer token), named in agent
 * config by `credential: NAME`, never held there. The value is sealed (AES-256-GCM, the payload
 * codec's key ring: infra/encryption.ts) because the service must send it, so it cannot be a hash.
 */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query(`
    CREATE TABLE workspace_secrets (
      id            bigserial PRIMARY KEY,
      workspace_id  bigint NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
      name          text NOT NULL,
      sealed        bytea NOT NULL,
      created_at    timestamptz NOT NULL DEFAULT now(),
      updated_at    timestamptz NOT NULL DEFAULT now(),
      UNIQUE (workspace_id, name)
    );
  `);
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query('DROP TABLE workspace_secrets');
};
