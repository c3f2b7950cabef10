import type { Migration } from '../migrate';

/**
 * Idempotency records: one row per (endpoint, environment, credential, Idempotency-Key), claimed
 * in flight and then holding the stored response for replay. Times come from the service's clock,
 * not the database's, so the 24-hour and 15-minute rules are testable.
 */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query(`
    CREATE TABLE idempotency_keys (
      id                bigserial PRIMARY KEY,
      -- sha256 of endpoint, environment, credential and the key: the caller's key text is not kept.
      scope_hash        text NOT NULL UNIQUE,
      endpoint          text NOT NULL,
      api_key_id        bigint NOT NULL REFERENCES api_keys(id),
      -- sha256 of method, path and the raw body bytes.
      fingerprint       text NOT NULL,
      state             text NOT NULL CHECK (state IN ('in_flight', 'completed')),
      -- Names the claim's owner, so a request whose stale claim was taken over cannot overwrite it.
      claim_token       uuid NOT NULL,
      -- body: status, headers and bytes replayed as stored; stream: a streamed run, named by run_public_id.
      kind              text CHECK (kind IN ('body', 'stream')),
      run_public_id     text,
      response_status   integer,
      response_headers  jsonb,
      response_body     bytea,
      created_at        timestamptz NOT NULL,
      completed_at      timestamptz,
      -- In flight: when the claim is released (15 minutes). Completed: end of replay (24 hours).
      expires_at        timestamptz NOT NULL,
      CHECK ((state = 'completed') = (kind IS NOT NULL AND response_status IS NOT NULL AND completed_at IS NOT NULL))
    );
    CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
  `);
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query('DROP TABLE idempotency_keys;');
};
