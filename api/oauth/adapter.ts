import { createHash } from 'node:crypto';
import { consumeModel, destroyModel, findModel, findModelByUid, findModelByUserCode, purgeExpiredModels, revokeGrant, upsertModel, type StoredModel } from '../../db/oauthModels';
import { logger } from '../../infra/logger';

/**
 * Models whose id is itself a bearer secret (the value a client sends). They are stored under the
 * SHA-256 of the id, without the id in the payload, so reading the table hands out no usable token.
 */
const SECRET_MODELS = new Set([
  'AccessToken',
  'AuthorizationCode',
  'RefreshToken',
  'RegistrationAccessToken',
  'InitialAccessToken',
  'ClientCredentials',
  'DeviceCode',
  'BackchannelAuthenticationRequest',
  'PushedAuthorizationRequest',
]);

/** Expired rows are deleted every this many writes of a process (lookups already skip them). */
const PURGE_EVERY_WRITES = 500;
let writes = 0;

type Payload = Record<string, unknown> & { grantId?: string; uid?: string; userCode?: string; accountId?: string };

/** oidc-provider's storage contract (one instance per model name), on PostgreSQL. */
export class PostgresAdapter {
  private readonly secret: boolean;

  constructor(private readonly model: string) {
    this.secret = SECRET_MODELS.has(model);
  }

  private key(id: string): string {
    return this.secret ? createHash('sha256').update(id).digest('base64url') : id;
  }

  async upsert(id: string, payload: Payload, expiresIn?: number): Promise<void> {
    const stored = this.secret ? { ...payload, jti: undefined } : payload;
    await upsertModel({
      model: this.model,
      id: this.key(id),
      payload: stored,
      grantId: payload.grantId ?? null,
      uid: payload.uid ?? null,
      userCode: payload.userCode ?? null,
      accountId: payload.accountId ?? null,
      expiresAt: expiresIn ? new Date(Date.now() + expiresIn * 1000) : null,
    });
    if (++writes % PURGE_EVERY_WRITES === 0) purgeExpiredModels().catch((err) => logger.warn({ err }, 'purging expired OAuth rows failed'));
  }

  async find(id: string): Promise<Payload | undefined> {
    return this.loaded(await findModel(this.model, this.key(id)), id);
  }

  async findByUid(uid: string): Promise<Payload | undefined> {
    return this.loaded(await findModelByUid(this.model, uid));
  }

  async findByUserCode(userCode: string): Promise<Payload | undefined> {
    return this.loaded(await findModelByUserCode(this.model, userCode));
  }

  /**
   * Two redemptions racing past the provider's own "already consumed" check: the second loses here,
   * as reuse, and the grant goes with it (as the provider does for a reused code or refresh token).
   */
  async consume(id: string): Promise<void> {
    if (await consumeModel(this.model, this.key(id))) return;
    const payload = await this.find(id);
    if (payload?.grantId) await revokeGrant(payload.grantId);
    const { errors } = await import('oidc-provider');
    throw new errors.InvalidGrant('grant request is invalid');
  }

  async destroy(id: string): Promise<void> {
    await destroyModel(this.model, this.key(id));
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await revokeGrant(grantId);
  }

  /** The payload as oidc-provider saved it, with the id of a secret model restored and consumption marked. */
  private loaded(row: StoredModel | undefined, id?: string): Payload | undefined {
    if (!row) return undefined;
    return {
      ...row.payload,
      ...(this.secret && id !== undefined && { jti: id }),
      ...(row.consumedAt && { consumed: Math.floor(row.consumedAt.getTime() / 1000) }),
    };
  }
}
