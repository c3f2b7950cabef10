import type { Migration } from '../migrate';

/**
 * Reports: an agent run asked for by a task, not a conversation, whose answer is kept as the report's
 * result. The run is an ordinary run of kind `report` (billed, logged, settled like any other).
 */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query(`
    ALTER TABLE runs DROP CONSTRAINT runs_kind_check,
      ADD CONSTRAINT runs_kind_check CHECK (kind IN ('response', 'agent_run', 'message', 'report'));

    CREATE TABLE reports (
      id             bigserial PRIMARY KEY,
      public_id      text NOT NULL UNIQUE,
      workspace_id   bigint NOT NULL REFERENCES workspaces(id),
      agent_id       bigint NOT NULL REFERENCES agents(id),
      run_public_id  text NOT NULL,
      name           text NOT NULL,
      format         text NOT NULL CHECK (format IN ('json', 'text', 'markdown')),
      status         text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'completed', 'failed')),
      result         jsonb,
      error_code     text,
      error_message  text,
      metadata       jsonb NOT NULL DEFAULT '{}',
      request_id     text NOT NULL,
      trace_id       text NOT NULL,
      -- The report's run as it was planned (agent version, options, credit hold made): a retried
      -- request starts the report's workflow from it if the first never did.
      run_input      jsonb NOT NULL,
      created_at     timestamptz NOT NULL DEFAULT now(),
      completed_at   timestamptz
    );
    CREATE INDEX reports_workspace ON reports (workspace_id, id);
  `);
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query(`
    DROP TABLE reports;
    ALTER TABLE runs DROP CONSTRAINT runs_kind_check,
      ADD CONSTRAINT runs_kind_check CHECK (kind IN ('response', 'agent_run', 'message'));
  `);
};
