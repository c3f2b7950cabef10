import type { Migration } from '../migrate';

/**
 * Tool calls a run waits on (domain/actions.ts): an approval, or a client tool's output. One row per
 * call and tool round (a model may reuse a call id in a later round), pending until it is answered,
 * expires, or its run is cancelled. The run object's required_action is its pending rows; an answer is replayed from its row.
 */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query(`
    CREATE TABLE run_actions (
      id           bigserial PRIMARY KEY,
      run_id       bigint NOT NULL REFERENCES runs(id),
      round        integer NOT NULL,
      call_id      text NOT NULL,
      type         text NOT NULL CHECK (type IN ('approval', 'client_tool')),
      tool         text NOT NULL,
      arguments    text,
      status       text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'denied', 'answered', 'expired', 'cancelled')),
      reason       text,
      expires_at   timestamptz NOT NULL,
      answered_at  timestamptz,
      UNIQUE (run_id, round, call_id)
    );
  `);
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query('DROP TABLE run_actions');
};
