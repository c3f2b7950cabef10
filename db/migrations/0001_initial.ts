import type { Migration } from '../migrate';

/** The foundation schema: tenancy, credentials, agents, conversations, runs, billing, outbox, logs. */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query(`
    CREATE TABLE partners (
      id          bigserial PRIMARY KEY,
      public_id   text NOT NULL UNIQUE,
      name        text NOT NULL,
      created_at  timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE workspaces (
      id                bigserial PRIMARY KEY,
      public_id         text NOT NULL UNIQUE,
      name              text NOT NULL,
      credits           bigint NOT NULL DEFAULT 0,
      usage_threshold   bigint,
      partner_id        bigint REFERENCES partners(id),
      tenant_ref        text,
      created_at        timestamptz NOT NULL DEFAULT now(),
      UNIQUE (partner_id, tenant_ref)
    );

    CREATE TABLE api_keys (
      id            bigserial PRIMARY KEY,
      public_id     text NOT NULL UNIQUE,
      kind          text NOT NULL CHECK (kind IN ('workspace', 'partner')),
      workspace_id  bigint REFERENCES workspaces(id),
      partner_id    bigint REFERENCES partners(id),
      name          text,
      environment   text NOT NULL DEFAULT 'live' CHECK (environment IN ('live', 'test')),
      key_hash      text NOT NULL UNIQUE,
      key_hint      text NOT NULL,
      scopes        text[] NOT NULL,
      expires_at    timestamptz,
      revoked_at    timestamptz,
      last_used_at  timestamptz,
      created_at    timestamptz NOT NULL DEFAULT now(),
      CHECK ((kind = 'workspace') = (workspace_id IS NOT NULL)),
      CHECK ((kind = 'partner') = (partner_id IS NOT NULL))
    );

    CREATE TABLE agents (
      id                 bigserial PRIMARY KEY,
      public_id          text NOT NULL UNIQUE,
      workspace_id       bigint NOT NULL REFERENCES workspaces(id),
      name               text NOT NULL,
      status             text NOT NULL,
      draft_config       jsonb NOT NULL,
      draft_changed      boolean NOT NULL DEFAULT false,
      published_version  integer NOT NULL,
      created_at         timestamptz NOT NULL DEFAULT now(),
      updated_at         timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX agents_workspace ON agents (workspace_id);

    CREATE TABLE agent_versions (
      id          bigserial PRIMARY KEY,
      agent_id    bigint NOT NULL REFERENCES agents(id),
      version     integer NOT NULL,
      config      jsonb NOT NULL,
      created_at  timestamptz NOT NULL DEFAULT now(),
      UNIQUE (agent_id, version)
    );

    CREATE TABLE conversations (
      id            bigserial PRIMARY KEY,
      public_id     text NOT NULL UNIQUE,
      workspace_id  bigint NOT NULL REFERENCES workspaces(id),
      agent_id      bigint REFERENCES agents(id),
      channel       text NOT NULL DEFAULT '',
      external_ref  text,
      internal      boolean NOT NULL DEFAULT false,
      created_at    timestamptz NOT NULL DEFAULT now(),
      UNIQUE (workspace_id, external_ref)
    );

    CREATE TABLE runs (
      id               bigserial PRIMARY KEY,
      public_id        text NOT NULL UNIQUE,
      workspace_id     bigint NOT NULL REFERENCES workspaces(id),
      agent_id         bigint NOT NULL REFERENCES agents(id),
      agent_version    integer NOT NULL,
      conversation_id  bigint REFERENCES conversations(id),
      kind             text NOT NULL CHECK (kind IN ('response', 'agent_run', 'message')),
      status           text NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled', 'blocked')),
      channel          text NOT NULL DEFAULT '',
      request_id       text NOT NULL,
      trace_id         text NOT NULL,
      metadata         jsonb NOT NULL DEFAULT '{}',
      output           jsonb,
      usage            jsonb NOT NULL DEFAULT '{"input_tokens":0,"output_tokens":0,"total_tokens":0,"cached_tokens":0}',
      error_code       text,
      error_message    text,
      created_at       timestamptz NOT NULL DEFAULT now(),
      started_at       timestamptz,
      completed_at     timestamptz
    );
    CREATE INDEX runs_workspace ON runs (workspace_id, id);

    CREATE TABLE messages (
      id               bigserial PRIMARY KEY,
      public_id        text NOT NULL UNIQUE,
      conversation_id  bigint NOT NULL REFERENCES conversations(id),
      run_id           bigint REFERENCES runs(id),
      role             text NOT NULL CHECK (role IN ('user', 'assistant')),
      content          jsonb NOT NULL,
      created_at       timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX messages_conversation ON messages (conversation_id, id);

    -- One line per run, ever: the unique run_id is what makes settlement bill once.
    CREATE TABLE ledger_lines (
      id             bigserial PRIMARY KEY,
      workspace_id   bigint NOT NULL REFERENCES workspaces(id),
      run_id         bigint NOT NULL UNIQUE REFERENCES runs(id),
      line           text NOT NULL,
      credits        bigint NOT NULL,
      input_tokens   integer NOT NULL,
      output_tokens  integer NOT NULL,
      created_at     timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE outbox_events (
      id             bigserial PRIMARY KEY,
      public_id      text NOT NULL UNIQUE,
      workspace_id   bigint NOT NULL REFERENCES workspaces(id),
      type           text NOT NULL,
      envelope       jsonb NOT NULL,
      created_at     timestamptz NOT NULL DEFAULT now(),
      dispatched_at  timestamptz
    );
    CREATE INDEX outbox_pending ON outbox_events (id) WHERE dispatched_at IS NULL;

    CREATE TABLE run_logs (
      id             bigserial PRIMARY KEY,
      public_id      text NOT NULL UNIQUE,
      workspace_id   bigint NOT NULL REFERENCES workspaces(id),
      run_id         bigint NOT NULL UNIQUE REFERENCES runs(id),
      status         text NOT NULL,
      latency_ms     integer NOT NULL,
      model          text NOT NULL,
      input_tokens   integer NOT NULL,
      output_tokens  integer NOT NULL,
      total_tokens   integer NOT NULL,
      cached_tokens  integer NOT NULL,
      tool_names     text[] NOT NULL DEFAULT '{}',
      error_code     text,
      created_at     timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX run_logs_workspace ON run_logs (workspace_id, id DESC);
  `);
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query(`
    DROP TABLE run_logs, outbox_events, ledger_lines, messages, runs, conversations,
      agent_versions, agents, api_keys, workspaces, partners;
  `);
};
