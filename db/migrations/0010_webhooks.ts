import type { Migration } from '../migrate';

/**
 * Partner webhooks: the partner's endpoints (secrets sealed at rest), one delivery per (event,
 * endpoint) fanned out from the outbox, and every attempt of each delivery.
 */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query(`
    ALTER TABLE partners ADD COLUMN webhook_rate integer CHECK (webhook_rate > 0);

    CREATE TABLE webhook_endpoints (
      id                       bigserial PRIMARY KEY,
      public_id                text NOT NULL UNIQUE,
      partner_id               bigint NOT NULL REFERENCES partners(id),
      url                      text NOT NULL,
      description              text NOT NULL DEFAULT '',
      status                   text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
      api_version              text NOT NULL,
      enabled_events           text[] NOT NULL,
      -- the event types the creating key's scopes admit: deliveries never go beyond them
      permitted_events         text[] NOT NULL,
      created_by_key           bigint NOT NULL REFERENCES api_keys(id),
      secret                   bytea NOT NULL,
      secret_hint              text NOT NULL,
      -- secrets rotated out and still signing: [{"secret": base64 of the sealed secret, "until": ISO 8601}]
      previous_secrets         jsonb NOT NULL DEFAULT '[]',
      -- the first failure after the last success (a gap without attempts ends the streak), and the last failure
      failing_since            timestamptz,
      last_failed_at           timestamptz,
      disabled_reason          text,
      created_at               timestamptz NOT NULL DEFAULT now(),
      updated_at               timestamptz NOT NULL DEFAULT now(),
      deleted_at               timestamptz
    );
    CREATE INDEX webhook_endpoints_partner ON webhook_endpoints (partner_id) WHERE deleted_at IS NULL;

    CREATE TABLE webhook_deliveries (
      id                 bigserial PRIMARY KEY,
      public_id          text NOT NULL UNIQUE,
      event_id           bigint NOT NULL REFERENCES outbox_events(id),
      endpoint_id        bigint NOT NULL REFERENCES webhook_endpoints(id),
      partner_id         bigint NOT NULL REFERENCES partners(id),
      workspace_id       bigint NOT NULL REFERENCES workspaces(id),
      event_type         text NOT NULL,
      status             text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed', 'skipped')),
      -- raised by every resend: a workflow run of an earlier generation makes no further attempt
      generation         integer NOT NULL DEFAULT 0,
      attempts           integer NOT NULL DEFAULT 0,
      last_status_code   integer,
      last_latency_ms    integer,
      last_error         text,
      started            boolean NOT NULL DEFAULT false,
      created_at         timestamptz NOT NULL DEFAULT now(),
      last_attempt_at    timestamptz,
      completed_at       timestamptz,
      UNIQUE (event_id, endpoint_id)
    );
    CREATE INDEX webhook_deliveries_partner ON webhook_deliveries (partner_id, id);
    CREATE INDEX webhook_deliveries_unstarted ON webhook_deliveries (workspace_id, id) WHERE NOT started AND status = 'pending';
    CREATE INDEX webhook_deliveries_endpoint_failed ON webhook_deliveries (endpoint_id, created_at) WHERE status IN ('failed', 'skipped');

    CREATE TABLE webhook_attempts (
      delivery_id   bigint NOT NULL REFERENCES webhook_deliveries(id),
      attempt       integer NOT NULL,
      status_code   integer,
      latency_ms    integer NOT NULL,
      error         text,
      held_ms       integer NOT NULL DEFAULT 0,
      attempted_at  timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (delivery_id, attempt)
    );
  `);
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query(`
    DROP TABLE webhook_attempts, webhook_deliveries, webhook_endpoints;
    ALTER TABLE partners DROP COLUMN webhook_rate;
  `);
};
