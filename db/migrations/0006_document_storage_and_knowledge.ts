import type { Migration } from '../migrate';

/**
 * Documents get their bytes (stored in parts here, or by an S3 backend) and a lifecycle; knowledge
 * gets ingestions, their chunks indexed for full-text search, and the entry that says which
 * ingestion's chunks retrieval reads for each document of a collection (switched in one statement,
 * so re-ingesting replaces a document's chunks atomically). Run log entries record what was retrieved.
 */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query(`
    ALTER TABLE documents
      ADD COLUMN size_bytes   bigint NOT NULL DEFAULT 0 CHECK (size_bytes >= 0),
      ADD COLUMN status       text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'uploaded')),
      ADD COLUMN sha256       text,
      ADD COLUMN storage      text,
      ADD COLUMN storage_key  text,
      ADD COLUMN uploaded_at  timestamptz;

    CREATE TABLE document_parts (
      document_id  bigint NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
      upload_key   text NOT NULL,
      seq          integer NOT NULL,
      data         bytea NOT NULL,
      PRIMARY KEY (document_id, upload_key, seq)
    );

    CREATE TABLE knowledge_ingestions (
      id               bigserial PRIMARY KEY,
      public_id        text NOT NULL UNIQUE,
      workspace_id     bigint NOT NULL REFERENCES workspaces(id),
      document_id      bigint NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
      collection_id    bigint NOT NULL REFERENCES knowledge_collections(id),
      status           text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'completed', 'failed')),
      sha256           text NOT NULL,
      pipeline         text NOT NULL,
      bytes_total      bigint NOT NULL,
      bytes_processed  bigint NOT NULL DEFAULT 0,
      chunks_indexed   integer NOT NULL DEFAULT 0,
      reused           boolean NOT NULL DEFAULT false,
      error_code       text,
      error_message    text,
      request_id       text NOT NULL,
      trace_id         text NOT NULL,
      created_at       timestamptz NOT NULL DEFAULT now(),
      started_at       timestamptz,
      completed_at     timestamptz
    );
    CREATE INDEX knowledge_ingestions_workspace ON knowledge_ingestions (workspace_id, id);
    CREATE INDEX knowledge_ingestions_document ON knowledge_ingestions (document_id, id);
    -- One ingestion of a document into a collection at a time: a second request joins the first.
    CREATE UNIQUE INDEX knowledge_ingestions_in_flight ON knowledge_ingestions (collection_id, document_id) WHERE status IN ('queued', 'running');

    CREATE TABLE knowledge_chunks (
      id             bigserial PRIMARY KEY,
      public_id      text NOT NULL UNIQUE,
      ingestion_id   bigint NOT NULL REFERENCES knowledge_ingestions(id) ON DELETE CASCADE,
      workspace_id   bigint NOT NULL,
      collection_id  bigint NOT NULL,
      document_id    bigint NOT NULL,
      seq            integer NOT NULL,
      content        text NOT NULL,
      tsv            tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED
    );
    CREATE INDEX knowledge_chunks_tsv ON knowledge_chunks USING gin (tsv);
    -- One chunk per place: an attempt that was given up can never add a second copy of a chunk.
    CREATE UNIQUE INDEX knowledge_chunks_ingestion ON knowledge_chunks (ingestion_id, seq);

    CREATE TABLE knowledge_entries (
      collection_id  bigint NOT NULL REFERENCES knowledge_collections(id) ON DELETE CASCADE,
      document_id    bigint NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
      ingestion_id   bigint NOT NULL REFERENCES knowledge_ingestions(id) ON DELETE CASCADE,
      PRIMARY KEY (collection_id, document_id)
    );
    CREATE INDEX knowledge_entries_ingestion ON knowledge_entries (ingestion_id);

    ALTER TABLE run_logs ADD COLUMN knowledge jsonb NOT NULL DEFAULT '[]';
  `);
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query(`
    ALTER TABLE run_logs DROP COLUMN knowledge;
    DROP TABLE knowledge_entries, knowledge_chunks, knowledge_ingestions, document_parts;
    ALTER TABLE documents DROP COLUMN size_bytes, DROP COLUMN status, DROP COLUMN sha256, DROP COLUMN storage, DROP COLUMN storage_key, DROP COLUMN uploaded_at;
  `);
};
