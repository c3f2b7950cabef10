import type { Migration } from '../migrate';

/**
 * A message's turn in its conversation: its credit hold names the conversation and gets a number in
 * the order holds were taken (under the conversation's lock). A turn is open while its hold is, from
 * acceptance until its run settles or the reconciler gives back the hold of a run that never ran; a
 * turn starts once no open turn of its conversation has a lower number.
 */
export const up: Migration = async ({ context }) => {
  await context.sequelize.query(`
    ALTER TABLE credit_reservations
      ADD COLUMN conversation_id bigint REFERENCES conversations(id),
      ADD COLUMN turn bigint GENERATED ALWAYS AS IDENTITY;
    CREATE INDEX credit_reservations_turns ON credit_reservations (conversation_id, turn) WHERE conversation_id IS NOT NULL;
  `);
};

export const down: Migration = async ({ context }) => {
  await context.sequelize.query('ALTER TABLE credit_reservations DROP COLUMN turn, DROP COLUMN conversation_id');
};
