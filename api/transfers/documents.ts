import type { Context } from 'koa';
import contentDisposition from 'content-disposition';
import { ServiceError } from '../../domain/errors';
import { signGrant, type GrantPurpose } from '../../domain/grants';
import type { StoredDocument } from '../../db/documents';
import { workspaceBalance } from '../../db/workspaces';
import { config } from '../../infra/config';
import { storeNamed, type StoredObject } from '../../storage';
import { requireUploaded } from '../../planning/uploaded';

/** Where a document's bytes are, for its store. */
export function storedObject(document: StoredDocument, uploadKey = document.storage_key ?? ''): StoredObject {
  return { documentKey: document.id, workspace: document.workspace, document: document.public_id, uploadKey };
}

/** Grants are issued only to a workspace that can spend (spec: "issued only after ... the credit checks"). */
export async function requireCredit(workspaceId: number): Promise<void> {
  if ((await workspaceBalance(workspaceId)) <= 0) {
    throw new ServiceError('usage_blocked', 'The workspace has no credits left; add credits to transfer documents.');
  }
}

/** A signed, expiring URL that redeems one purpose on one document, with no other credential. */
export function transferUrl(document: Pick<StoredDocument, 'public_id' | 'workspace'>, purpose: GrantPurpose): { url: string; expires_at: string } {
  const c = config();
  const ttl = purpose === 'upload' ? c.documents.uploadGrantTtlS : c.documents.downloadGrantTtlS;
  const expiresAt = Math.floor(Date.now() / 1000) + ttl;
  const token = signGrant({ document: document.public_id, workspace: document.workspace, purpose, expiresAt }, c.signingSecret);
  const path = purpose === 'upload' ? 'uploads' : 'downloads';
  return { url: `${c.publicBaseUrl}/api/v2/documents/${path}/${token}`, expires_at: new Date(expiresAt * 1000).toISOString() };
}

export const alreadyUploaded = () =>
  new ServiceError('document_already_uploaded', 'This document was uploaded already; an upload grant is redeemed once. Create a new document to upload other bytes.');

/**
 * Answers with the document's bytes, always as an attachment that a browser must not sniff or render
 * (an uploaded HTML or SVG file never runs in the API's origin); the caller cannot change that.
 */
export async function sendDocument(ctx: Context, document: StoredDocument): Promise<void> {
  const uploaded = requireUploaded(document);
  const body = await storeNamed(uploaded.storage).read(storedObject(uploaded));
  ctx.status = 200;
  ctx.set('Content-Disposition', contentDisposition(document.name, { type: 'attachment' }));
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Content-Security-Policy', "default-src 'none'; sandbox");
  ctx.set('Cache-Control', 'private, no-store');
  ctx.type = 'application/octet-stream';
  ctx.length = document.size_bytes;
  ctx.body = body;
}
