import type { Middleware } from 'koa';
import { ServiceError } from '../../domain/errors';
import { InvalidGrant, verifyGrant, type GrantPurpose } from '../../domain/grants';
import { findGrantedDocument } from '../../db/documents';
import { config } from '../../infra/config';
import { addressRefusedFor, recordAuthFailure } from '../../callers/authFailures';
import type { AppState } from './state';
import { notFound } from '../../callers/tenancy';

/**
 * The access step of the token-addressed transfer endpoints, in place of authorize(): the token in
 * the path is the credential. It must be ours, unexpired and for this purpose, and its document is
 * re-read (a deleted one is 404). A token that is not ours counts as a failed authentication of the
 * client address, like a guessed key.
 */
export function redeemGrant(purpose: GrantPurpose): Middleware<AppState & { input: { params: { token: string } } }> {
  return async (ctx, next) => {
    // A refusal while an upload's client may still be sending closes the connection rather than read
    // the rest of the body; the upload's handler keeps the connection once it has taken the bytes.
    if (purpose === 'upload') ctx.set('Connection', 'close');
    const wait = addressRefusedFor(ctx.ip);
    if (wait !== undefined) {
      throw new ServiceError('rate_limited', 'Too many failed authentications from this address; retry after the window ends.', { 'Retry-After': String(wait) });
    }
    let grant;
    try {
      grant = verifyGrant(ctx.state.input.params.token, purpose, config().signingSecret, Math.floor(Date.now() / 1000));
    } catch (err) {
      if (err instanceof InvalidGrant) await recordAuthFailure(ctx.ip);
      throw err;
    }
    const document = await findGrantedDocument(grant.workspace, grant.document);
    if (!document) throw notFound('document_not_found');
    ctx.state.document = document;
    await next();
  };
}
