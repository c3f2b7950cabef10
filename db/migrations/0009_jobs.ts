import type { Migration } from '../migrate';

/**
 * Jobs: queued work over many items (runs, ingestions, extractions), each item's outcome recorded.
 * The items are written with the job, so the job's workflow reads them a window at a time and its
 * history never holds them all.
 */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query(`
    CREATE TABLE jobs (
      id                bigserial PRIMARY KEY,
      public_id         text NOT NULL UNIQUE,
      workspace_id      bigint NOT NULL REFERENCES workspaces(id),
      type              text NOT NULL CHECK (type IN ('runs.batch', 'knowledge.ingest', 'extractions.batch')),
      params            jsonb NOT NULL,
      status            text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled')),
      cancel_requested  boolean NOT NULL DEFAULT false,
      items_total       integer NOT NULL,
      request_id        text NOT NULL,
      trace_id          text NOT NULL,
      created_at        timestamptz NOT NULL DEFAULT now(),
      started_at        timestamptz,
      completed_at      timestamptz
    );
    CREATE INDEX jobs_workspace ON jobs (workspace_id, id);

    CREATE TABLE job_items (
      job_id         bigint NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
      seq            integer NOT NULL,
      item           jsonb NOT NULL,
      status         text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled')),
      resource_id    text,
      error_code     text,
      error_message  text,
      PRIMARY KEY (job_id, seq)
    );
    CREATE INDEX job_items_status ON job_items (job_id, status);
  `);
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query('DROP TABLE job_items, jobs');
};
