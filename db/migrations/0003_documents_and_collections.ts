import type { Migration } from '../migrate';

/**
 * The resources a run's request_context.resource_id can narrow to: documents and knowledge
 * collections. Upload, download and ingestion build on these tables later.
 */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query(`
    CREATE TABLE documents (
      id            bigserial PRIMARY KEY,
      public_id     text NOT NULL UNIQUE,
      workspace_id  bigint NOT NULL REFERENCES workspaces(id),
      name          text NOT NULL,
      mime_type     text NOT NULL DEFAULT 'application/octet-stream',
      created_at    timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX documents_workspace ON documents (workspace_id, id);

    CREATE TABLE knowledge_collections (
      id            bigserial PRIMARY KEY,
      public_id     text NOT NULL UNIQUE,
      workspace_id  bigint NOT NULL REFERENCES workspaces(id),
      name          text NOT NULL,
      created_at    timestamptz NOT NULL DEFAULT now(),
      UNIQUE (workspace_id, name)
    );

    ALTER TABLE runs ADD COLUMN resource_id text;
  `);
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE runs DROP COLUMN resource_id; DROP TABLE knowledge_collections, documents;');
};
