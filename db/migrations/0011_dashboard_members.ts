import type { Migration } from '../migrate';

/**
 * Dashboard sign-in: workspace members (scrypt password hashes, a one-time set-up token until the
 * first password is chosen) and their sessions (only a hash of the cookie is kept). A member's
 * session may also call the API, so idempotency records name either a key or a member.
 */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query(`
    CREATE TABLE members (
      id                bigserial PRIMARY KEY,
      public_id         text NOT NULL UNIQUE,
      workspace_id      bigint NOT NULL REFERENCES workspaces(id),
      email             text NOT NULL,
      role              text NOT NULL CHECK (role IN ('owner', 'developer', 'viewer')),
      password_hash     text,
      setup_token_hash  text UNIQUE,
      setup_expires_at  timestamptz,
      created_at        timestamptz NOT NULL DEFAULT now(),
      revoked_at        timestamptz
    );
    -- One sign-in name per person: an email opens exactly one workspace.
    CREATE UNIQUE INDEX members_email ON members (lower(email));

    CREATE TABLE dashboard_sessions (
      id            bigserial PRIMARY KEY,
      token_hash    text NOT NULL UNIQUE,
      member_id     bigint NOT NULL REFERENCES members(id),
      csrf_token    text NOT NULL,
      created_at    timestamptz NOT NULL DEFAULT now(),
      expires_at    timestamptz NOT NULL,
      ended_at      timestamptz
    );
    CREATE INDEX dashboard_sessions_member ON dashboard_sessions (member_id) WHERE ended_at IS NULL;

    -- The dashboard's usage chart and its conversation list read these ranges.
    CREATE INDEX ledger_lines_workspace_day ON ledger_lines (workspace_id, created_at);
    CREATE INDEX conversations_workspace ON conversations (workspace_id, id);

    ALTER TABLE idempotency_keys
      ALTER COLUMN api_key_id DROP NOT NULL,
      ADD COLUMN member_id bigint REFERENCES members(id),
      ADD CHECK ((api_key_id IS NULL) <> (member_id IS NULL));
  `);
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query(`
    DELETE FROM idempotency_keys WHERE member_id IS NOT NULL;
    ALTER TABLE idempotency_keys DROP COLUMN member_id, ALTER COLUMN api_key_id SET NOT NULL;
    DROP INDEX ledger_lines_workspace_day;
    DROP INDEX conversations_workspace;
    DROP TABLE dashboard_sessions;
    DROP TABLE members;
  `);
};
