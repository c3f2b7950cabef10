import { isSealed, keyRing, open, seal, sealedKeyId, type KeyRing } from '../infra/encryption';
import { ServiceError } from '../domain/errors';
import { isSecretName, isSecretOrigin, isSecretValue, secretBindingOf, secretGoesTo, SECRET_NAME_MESSAGE, SECRET_ORIGIN_MESSAGE, SECRET_VALUE_MESSAGE, SECRETS_PER_WORKSPACE, type SecretView } from '../domain/secrets';
import { sql, statement, transaction, type Sql } from './sql';

/**
 * workspace_secrets (migration 0031): credentials an agent's tools use, sealed at rest with the payload
 * codec's key ring (the service must send them, so they cannot be stored as hashes the way keys are).
 * Nothing here returns a value except openSecret; no statement's text or error carries one.
 */

const VIEW = 'name, origin, created_at, updated_at';

// A new name only while the workspace holds fewer than $4 (replacing a value is always taken).
const PUT = statement(
  `INSERT INTO workspace_secrets (workspace_id, name, sealed, origin)
   SELECT $1, $2, $3, $5
    WHERE EXISTS (SELECT 1 FROM workspace_secrets WHERE workspace_id = $1 AND name = $2)
       OR (SELECT count(*) FROM workspace_secrets WHERE workspace_id = $1) < $4
   ON CONFLICT (workspace_id, name) DO UPDATE SET sealed = EXCLUDED.sealed, origin = COALESCE(EXCLUDED.origin, workspace_secrets.origin), updated_at = now()
   RETURNING ${VIEW}`,
);
// Puts into one workspace count one after another, so two at once cannot both take the last place.
const LOCK_WORKSPACE = statement("SELECT pg_advisory_xact_lock(hashtextextended('workspace_secrets:' || $1::text, 0))");
const SEALED = statement('SELECT sealed FROM workspace_secrets WHERE workspace_id = $1 AND name = $2');
// By code point, whatever the database's collation: the same order on every deployment.
const LIST = statement(`SELECT ${VIEW} FROM workspace_secrets WHERE workspace_id = $1 ORDER BY name COLLATE "C"`);
const DELETE = statement('DELETE FROM workspace_secrets WHERE workspace_id = $1 AND name = $2');

/**
 * Sets the workspace's secret `name`, replacing its value if it has one: its name, binding (`origin`: an
 * origin, or an origin and path prefix) and times (never the value). Set again without one, it keeps
 * the one it had.
 */
export async function putSecret(workspaceId: number, name: string, value: string, origin?: string): Promise<SecretView> {
  // The callers validate first (400 / a CLI error); this keeps a value that slipped past out of the table, without echoing it.
  if (!isSecretName(name)) throw new Error(SECRET_NAME_MESSAGE);
  if (!isSecretValue(value)) throw new Error(SECRET_VALUE_MESSAGE);
  if (origin !== undefined && !isSecretOrigin(origin)) throw new Error(SECRET_ORIGIN_MESSAGE);
  const sealed = seal(Buffer.from(value, 'utf8'));
  const [row] = await transaction(async (tx) => {
    await tx.rows(LOCK_WORKSPACE, [workspaceId]);
    return tx.rows<SecretView>(PUT, [workspaceId, name, sealed, SECRETS_PER_WORKSPACE, origin ?? null]);
  });
  if (!row) throw new ServiceError('secret_limit_reached', `This workspace has ${SECRETS_PER_WORKSPACE} secrets, the most it may have: delete one before setting another.`);
  return row;
}

// Bound to its first use's origin and path prefix when none was given: from then on it goes there alone.
const SEALED_WITH_ORIGIN = statement('SELECT sealed, origin FROM workspace_secrets WHERE workspace_id = $1 AND name = $2');
const BIND = statement('UPDATE workspace_secrets SET origin = COALESCE(origin, $3) WHERE workspace_id = $1 AND name = $2 RETURNING sealed, origin');

/**
 * The workspace's secret `name` to send to a server at `serverUrl`: its plaintext when it is bound
 * to that server's origin and a path prefix the URL's path is under (or bound now, at its first use,
 * to the URL's origin and path up to its last `/`: only an operator's `secret set` leaves one
 * unbound; the API and the dashboard require the binding), `{ boundTo }` when it is bound elsewhere,
 * undefined when the workspace has none. So whoever can edit an agent cannot send a secret anywhere
 * but where it was meant to go, not even to another path of the same origin.
 */
export async function openSecretFor(workspaceId: number, name: string, serverUrl: string, on: Sql = sql): Promise<{ value: string } | { boundTo: string } | undefined> {
  let [row] = await on.rows<{ sealed: Buffer; origin: string | null }>(SEALED_WITH_ORIGIN, [workspaceId, name]);
  // Written only at the first use: every later call reads.
  if (row && row.origin === null) [row] = await on.rows<{ sealed: Buffer; origin: string }>(BIND, [workspaceId, name, secretBindingOf(serverUrl)]);
  if (!row) return undefined;
  return row.origin !== null && secretGoesTo(row.origin, serverUrl) ? { value: open(row.sealed).toString('utf8') } : { boundTo: row.origin ?? '' };
}

/** The plaintext of the workspace's secret `name`; undefined when it has none (another workspace's is never found). */
export async function openSecret(workspaceId: number, name: string, on: Sql = sql): Promise<string | undefined> {
  const [row] = await on.rows<{ sealed: Buffer }>(SEALED, [workspaceId, name]);
  return row && open(row.sealed).toString('utf8');
}

/** The workspace's secrets by name: names and times, never values. */
export function listSecrets(workspaceId: number, on: Sql = sql): Promise<SecretView[]> {
  return on.rows<SecretView>(LIST, [workspaceId]);
}

/** Whether the workspace had a secret `name` (now deleted). */
export async function deleteSecret(workspaceId: number, name: string, on: Sql = sql): Promise<boolean> {
  return (await on.rowCount(DELETE, [workspaceId, name])) === 1;
}

const SEALED_PAGE = statement(
  `SELECT s.id, s.name, s.sealed, w.public_id AS workspace
     FROM workspace_secrets s JOIN workspaces w ON w.id = s.workspace_id
    WHERE s.id > $1 ORDER BY s.id LIMIT $2`,
);
// Only if unchanged since it was read: a put meanwhile wrote a value sealed with the active key already.
const RESEALED = statement('UPDATE workspace_secrets SET sealed = $2 WHERE id = $1 AND sealed = $3');

/**
 * Re-seals, under the active key, every secret that another key of the ring sealed (or that was
 * stored unsealed, which open() passes through), so that the older
 * keys can leave the ring (as resealEndpointSecrets does for webhook endpoint secrets; the worker runs
 * both at start): how many were re-sealed, and the secrets no key of the ring opens (`ws_…/NAME`: their
 * tools cannot authenticate until that key is back, or the secret is set again).
 */
export async function resealWorkspaceSecrets(keys: KeyRing = keyRing(), on: Sql = sql): Promise<{ resealed: number; unopenable: string[] }> {
  const outcome = { resealed: 0, unopenable: [] as string[] };
  for (let after = 0; ; ) {
    const rows = await on.rows<{ id: number; name: string; sealed: Buffer; workspace: string }>(SEALED_PAGE, [after, 500]);
    if (rows.length === 0) return outcome;
    after = rows.at(-1)!.id;
    for (const row of rows) {
      if (isSealed(row.sealed) && sealedKeyId(row.sealed) === keys.active.id) continue;
      let resealed: Buffer;
      try {
        resealed = seal(open(row.sealed, keys), keys);
      } catch {
        outcome.unopenable.push(`${row.workspace}/${row.name}`);
        continue;
      }
      outcome.resealed += await on.rowCount(RESEALED, [row.id, resealed, row.sealed]);
    }
  }
}
