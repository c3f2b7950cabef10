import type { Migration } from '../migrate';

/**
 * OAuth 2.1 (api/oauth): oidc-provider's models (clients, grants, interactions, sessions, codes and
 * tokens) in one table, keyed by model and id. Bearer values (codes, tokens) are stored only as
 * their SHA-256 (api/oauth/adapter.ts). account_id is the member a grant or token belongs to, so
 * revoking the member deletes them all at once.
 */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query(`
    CREATE TABLE oauth_models (
      model        text NOT NULL,
      id           text NOT NULL,
      payload      jsonb NOT NULL,
      grant_id     text,
      uid          text,
      user_code    text,
      account_id   text,
      consumed_at  timestamptz,
      expires_at   timestamptz,
      PRIMARY KEY (model, id)
    );
    CREATE INDEX oauth_models_grant ON oauth_models (grant_id) WHERE grant_id IS NOT NULL;
    CREATE INDEX oauth_models_uid ON oauth_models (model, uid) WHERE uid IS NOT NULL;
    CREATE INDEX oauth_models_user_code ON oauth_models (model, user_code) WHERE user_code IS NOT NULL;
    CREATE INDEX oauth_models_account ON oauth_models (account_id) WHERE account_id IS NOT NULL;
    CREATE INDEX oauth_models_expires ON oauth_models (expires_at) WHERE expires_at IS NOT NULL;
  `);
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query('DROP TABLE oauth_models');
};
