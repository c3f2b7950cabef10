import { sql, statement, type Sql } from './sql';

/** The oauth_models table: one row per oidc-provider model instance (api/oauth/adapter.ts). */
export interface StoredModel {
  payload: Record<string, unknown>;
  consumedAt: Date | null;
}

export interface ModelRow {
  model: string;
  id: string;
  payload: Record<string, unknown>;
  grantId: string | null;
  uid: string | null;
  userCode: string | null;
  accountId: string | null;
  expiresAt: Date | null;
}

// A saved model is written whole again (oidc-provider re-saves interactions and sessions); consumption stays.
const UPSERT = statement(
  `INSERT INTO oauth_models (model, id, payload, grant_id, uid, user_code, account_id, expires_at)
   VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
   ON CONFLICT (model, id) DO UPDATE
     SET payload = excluded.payload, grant_id = excluded.grant_id, uid = excluded.uid,
         user_code = excluded.user_code, account_id = excluded.account_id, expires_at = excluded.expires_at`,
);

export async function upsertModel(r: ModelRow, on: Sql = sql): Promise<void> {
  await on.rows(UPSERT, [r.model, r.id, JSON.stringify(r.payload), r.grantId, r.uid, r.userCode, r.accountId, r.expiresAt]);
}

const LIVE = `(expires_at IS NULL OR expires_at > now())`;
const COLUMNS = `payload, consumed_at AS "consumedAt"`;

const FIND = statement(`SELECT ${COLUMNS} FROM oauth_models WHERE model = $1 AND id = $2 AND ${LIVE}`);
const FIND_BY_UID = statement(`SELECT ${COLUMNS} FROM oauth_models WHERE model = $1 AND uid = $2 AND ${LIVE}`);
const FIND_BY_USER_CODE = statement(`SELECT ${COLUMNS} FROM oauth_models WHERE model = $1 AND user_code = $2 AND ${LIVE}`);

export async function findModel(model: string, id: string, on: Sql = sql): Promise<StoredModel | undefined> {
  const [row] = await on.rows<StoredModel>(FIND, [model, id]);
  return row;
}

export async function findModelByUid(model: string, uid: string, on: Sql = sql): Promise<StoredModel | undefined> {
  const [row] = await on.rows<StoredModel>(FIND_BY_UID, [model, uid]);
  return row;
}

export async function findModelByUserCode(model: string, userCode: string, on: Sql = sql): Promise<StoredModel | undefined> {
  const [row] = await on.rows<StoredModel>(FIND_BY_USER_CODE, [model, userCode]);
  return row;
}

const CONSUME = statement('UPDATE oauth_models SET consumed_at = now() WHERE model = $1 AND id = $2 AND consumed_at IS NULL');

/** Marks a code or refresh token used; false when it already was (a concurrent redemption got there first). */
export async function consumeModel(model: string, id: string, on: Sql = sql): Promise<boolean> {
  return (await on.rowCount(CONSUME, [model, id])) > 0;
}

const DESTROY = statement('DELETE FROM oauth_models WHERE model = $1 AND id = $2');

export async function destroyModel(model: string, id: string, on: Sql = sql): Promise<void> {
  await on.rows(DESTROY, [model, id]);
}

// A grant's codes and tokens of every model go together (revocation, a code used twice).
const REVOKE_GRANT = statement('DELETE FROM oauth_models WHERE grant_id = $1');

export async function revokeGrant(grantId: string, on: Sql = sql): Promise<void> {
  await on.rows(REVOKE_GRANT, [grantId]);
}

const REVOKE_ACCOUNT = statement('DELETE FROM oauth_models WHERE account_id = $1');

/** Deletes every grant, code, token and session of a member; how many rows went. */
export async function revokeAccount(accountId: string, on: Sql = sql): Promise<number> {
  return on.rowCount(REVOKE_ACCOUNT, [accountId]);
}

// Bounded, so a backlog is worked off over several calls instead of one long delete.
const PURGE = statement(
  `DELETE FROM oauth_models WHERE ctid IN (SELECT ctid FROM oauth_models WHERE expires_at < now() - interval '1 hour' LIMIT 1000)`,
);

/** Deletes expired rows (they are already invisible to every lookup). */
export async function purgeExpiredModels(on: Sql = sql): Promise<number> {
  return on.rowCount(PURGE, []);
}
