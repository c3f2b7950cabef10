import type { Migration } from '../migrate';

/**
 * Runs on a schedule: what to run (the agent and the runtime input, as POST /agents/{id}/runs takes
 * it), when (a cron expression or an interval, in a time zone), what to do when a firing finds the
 * last one still running, and who created it (each firing is checked against the creator's scopes).
 * The Temporal Schedule of the same id does the firing; this row is what the API answers from, and
 * what each firing reads. The last firing is kept on the row.
 */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query(`
    CREATE TABLE schedules (
      id                 bigserial PRIMARY KEY,
      public_id          text NOT NULL UNIQUE,
      workspace_id       bigint NOT NULL REFERENCES workspaces(id),
      agent_public_id    text NOT NULL,
      run                jsonb NOT NULL,
      cron               text,
      interval_seconds   integer,
      timezone           text NOT NULL,
      overlap            text NOT NULL CHECK (overlap IN ('skip', 'buffer_one', 'allow')),
      paused             boolean NOT NULL,
      created_by_key     bigint REFERENCES api_keys(id),
      created_by_member  bigint REFERENCES members(id),
      request_id         text NOT NULL,
      last_fired_at      timestamptz,
      last_run           text,
      last_status        text CHECK (last_status IN ('started', 'blocked', 'failed')),
      last_error_code    text,
      created_at         timestamptz NOT NULL DEFAULT now(),
      updated_at         timestamptz NOT NULL DEFAULT now(),
      deleted_at         timestamptz,
      CHECK ((cron IS NULL) <> (interval_seconds IS NULL))
    );
    CREATE INDEX schedules_workspace ON schedules (workspace_id, id) WHERE deleted_at IS NULL;
  `);
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query('DROP TABLE schedules');
};
