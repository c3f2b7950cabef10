import type { Migration } from '../migrate';

/**
 * Extractions: structured data drawn from a document's text by runs of kind `extraction`, one per
 * segment of the text, merged. Agents gain `builtin`: a workspace's built-in agents (the extraction
 * agent used when a request names none) are found by it, created on first use.
 */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query(`
    ALTER TABLE runs DROP CONSTRAINT runs_kind_check,
      ADD CONSTRAINT runs_kind_check CHECK (kind IN ('response', 'agent_run', 'message', 'report', 'extraction'));

    ALTER TABLE agents ADD COLUMN builtin text;
    CREATE UNIQUE INDEX agents_builtin ON agents (workspace_id, builtin) WHERE builtin IS NOT NULL;

    CREATE TABLE extractions (
      id                  bigserial PRIMARY KEY,
      public_id           text NOT NULL UNIQUE,
      workspace_id        bigint NOT NULL REFERENCES workspaces(id),
      -- Kept by public id as well: the record outlives its document (which may be deleted).
      document_id         bigint REFERENCES documents(id) ON DELETE SET NULL,
      document_public_id  text NOT NULL,
      agent_id            bigint NOT NULL REFERENCES agents(id),
      status              text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'completed', 'failed')),
      schema              jsonb NOT NULL,
      instructions        text,
      result              jsonb,
      error_code          text,
      error_message       text,
      segments_total      integer NOT NULL DEFAULT 0,
      segments_done       integer NOT NULL DEFAULT 0,
      runs                text[] NOT NULL DEFAULT '{}',
      request_id          text NOT NULL,
      trace_id            text NOT NULL,
      created_at          timestamptz NOT NULL DEFAULT now(),
      started_at          timestamptz,
      completed_at        timestamptz
    );
    CREATE INDEX extractions_workspace ON extractions (workspace_id, id);
  `);
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query(`
    DROP TABLE extractions;
    DROP INDEX agents_builtin;
    ALTER TABLE agents DROP COLUMN builtin;
    ALTER TABLE runs DROP CONSTRAINT runs_kind_check,
      ADD CONSTRAINT runs_kind_check CHECK (kind IN ('response', 'agent_run', 'message', 'report'));
  `);
};
