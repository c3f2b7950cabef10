import { createHash } from 'node:crypto';
import http from 'node:http';
import { QueryTypes } from 'sequelize';
import { signGrant } from '../domain/grants';
import { db } from '../db/sequelize';
import { config, resetConfig } from '../infra/config';
import { createDocument, pathOf, uploadBytes, uploadedDocument } from './support/documents';
import { call, tenant, until, useApi } from './support/stack';

const api = useApi();
const SCOPES = ['documents:create', 'documents:read', 'documents:delete'];
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const withoutRequestId = (text: string) => text.replace(/req_[0-9a-z]+/, '');

async function partsOf(document: string): Promise<number> {
  const [rows] = await db().query('SELECT count(*)::int AS n FROM document_parts p JOIN documents d ON d.id = p.document_id WHERE d.public_id = $1', { bind: [document] });
  return (rows as { n: number }[])[0]?.n ?? 0;
}

describe('documents: create, upload, read', () => {
  it('creates a pending document with an upload URL, takes its bytes by PUT, and serves them back', async () => {
    const t = await tenant({ scopes: SCOPES });
    const bytes = Buffer.from('Quarterly figures: revenue up 12%.\n');
    const created = await createDocument(api.url, t.key, 'figures.txt', 'text/plain', bytes);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ object: 'document', name: 'figures.txt', mime_type: 'text/plain', size_bytes: bytes.length, status: 'pending', sha256: null });
    expect(created.body.upload_url).toContain('/api/v2/documents/uploads/');

    const uploaded = await uploadBytes(api.url, created.body.upload_url, bytes);
    expect(uploaded.status).toBe(200);
    expect(uploaded.body).toMatchObject({ id: created.body.id, status: 'uploaded', sha256: sha256(bytes) });
    expect(uploaded.body).not.toHaveProperty('upload_url');

    const read = await call(api.url, 'GET', `/api/v2/documents/${created.body.id}`, { key: t.key });
    expect(read.body).toMatchObject({ status: 'uploaded', sha256: sha256(bytes) });
    const content = await fetch(`${api.url}/api/v2/documents/${created.body.id}/content`, { headers: { authorization: `Bearer ${t.key}` } });
    expect(content.status).toBe(200);
    expect(Buffer.from(await content.arrayBuffer())).toEqual(bytes);
  });

  it('takes the bytes by POST too, for clients that cannot PUT', async () => {
    const t = await tenant({ scopes: SCOPES });
    const bytes = Buffer.from('posted bytes');
    const created = await createDocument(api.url, t.key, 'posted.txt', 'text/plain', bytes);
    const uploaded = await uploadBytes(api.url, created.body.upload_url, bytes, 'POST');
    expect(uploaded.status).toBe(200);
    expect(uploaded.body.sha256).toBe(sha256(bytes));
  });

  it('always serves content as a nosniff attachment, HTML and SVG included, whatever the caller asks', async () => {
    const t = await tenant({ scopes: SCOPES });
    for (const [name, type, text] of [
      ['page.html', 'text/html', '<html><body><script>alert(document.cookie)</script></body></html>'],
      ['image.svg', 'image/svg+xml', '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>'],
    ]) {
      const id = await uploadedDocument(api.url, t.key, name, type, Buffer.from(text));
      const direct = await fetch(`${api.url}/api/v2/documents/${id}/content?disposition=inline`, { headers: { authorization: `Bearer ${t.key}`, accept: type } });
      const grant = await call(api.url, 'POST', `/api/v2/documents/${id}/downloads`, { key: t.key });
      expect(grant.status).toBe(201);
      const viaGrant = await fetch(api.url + pathOf(grant.body.url));
      for (const res of [direct, viaGrant]) {
        expect(res.status).toBe(200);
        expect(res.headers.get('content-disposition')).toBe(`attachment; filename="${name}"`);
        expect(res.headers.get('x-content-type-options')).toBe('nosniff');
        expect(res.headers.get('content-type')).toBe('application/octet-stream');
        expect(await res.text()).toBe(text);
      }
    }
  });

  it('bounds the upload to the declared size: more is 413 at once, less is 400, and neither stores anything', async () => {
    const t = await tenant({ scopes: SCOPES });
    const created = await createDocument(api.url, t.key, 'bounded.bin', 'application/octet-stream', Buffer.alloc(1000));
    // Chunked, so only the stream itself can tell the size.
    const tooMuch = new ReadableStream({
      start(controller) {
        controller.enqueue(new Uint8Array(800));
        controller.enqueue(new Uint8Array(800));
        controller.close();
      },
    });
    const over = await fetch(api.url + pathOf(created.body.upload_url), { method: 'PUT', body: tooMuch, duplex: 'half' } as RequestInit);
    expect(over.status).toBe(413);
    expect(((await over.json()) as { error: { code: string } }).error.code).toBe('payload_too_large');
    const under = await uploadBytes(api.url, created.body.upload_url, Buffer.alloc(999));
    expect(under.status).toBe(400);
    expect(under.body.error.message).toContain('size_bytes 1000');
    expect(await partsOf(created.body.id)).toBe(0);
    expect((await call(api.url, 'GET', `/api/v2/documents/${created.body.id}`, { key: t.key })).body.status).toBe('pending');
    // The grant still works for the right bytes.
    expect((await uploadBytes(api.url, created.body.upload_url, Buffer.alloc(1000))).status).toBe(200);

    const huge = await call(api.url, 'POST', '/api/v2/documents', { key: t.key, body: { name: 'x', mime_type: 'text/plain', size_bytes: config().documents.maxBytes + 1 } });
    expect(huge.status).toBe(400);
    expect(huge.body.error.message).toBe(`size_bytes must be at most ${config().documents.maxBytes}`);
  });

  it('pages the list with cursor and next_cursor, newest first', async () => {
    const t = await tenant({ scopes: SCOPES });
    const ids: string[] = [];
    for (const n of [1, 2, 3]) ids.unshift((await createDocument(api.url, t.key, `d${n}.txt`, 'text/plain', Buffer.from('x'))).body.id);
    const first = await call(api.url, 'GET', '/api/v2/documents?limit=2', { key: t.key });
    expect(first.body.data.map((d: { id: string }) => d.id)).toEqual(ids.slice(0, 2));
    const second = await call(api.url, 'GET', `/api/v2/documents?limit=2&cursor=${first.body.next_cursor}`, { key: t.key });
    expect(second.body.data.map((d: { id: string }) => d.id)).toEqual(ids.slice(2));
    expect(second.body.next_cursor).toBeNull();
    const other = await tenant({ scopes: SCOPES });
    const foreign = await call(api.url, 'GET', `/api/v2/documents?cursor=${first.body.next_cursor}`, { key: other.key });
    expect(foreign.status).toBe(400);
  });

  it('is refused without credits (402) and without the scope (403)', async () => {
    const broke = await tenant({ scopes: SCOPES, credits: 0 });
    const refused = await createDocument(api.url, broke.key, 'x.txt', 'text/plain', Buffer.from('x'));
    expect(refused.status).toBe(402);
    expect(refused.body.error.code).toBe('usage_blocked');
    const reader = await tenant({ scopes: ['documents:read'] });
    expect((await createDocument(api.url, reader.key, 'x.txt', 'text/plain', Buffer.from('x'))).status).toBe(403);
  });

  it('answers a retried create with the same Idempotency-Key with the same document', async () => {
    const t = await tenant({ scopes: SCOPES });
    const body = { name: 'once.txt', mime_type: 'text/plain', size_bytes: 4 };
    const first = await call(api.url, 'POST', '/api/v2/documents', { key: t.key, body, headers: { 'Idempotency-Key': 'doc-once' } });
    const again = await call(api.url, 'POST', '/api/v2/documents', { key: t.key, body, headers: { 'Idempotency-Key': 'doc-once' } });
    expect(again.body.id).toBe(first.body.id);
    expect(again.headers.get('idempotency-replayed')).toBe('true');
  });
});

describe('transfer grants', () => {
  async function pendingAndUploaded() {
    const t = await tenant({ scopes: SCOPES });
    const pending = await createDocument(api.url, t.key, 'p.txt', 'text/plain', Buffer.from('pending'));
    const id = await uploadedDocument(api.url, t.key, 'u.txt', 'text/plain', Buffer.from('uploaded'));
    const download = await call(api.url, 'POST', `/api/v2/documents/${id}/downloads`, { key: t.key });
    return { t, pending: pending.body, uploaded: id, downloadUrl: download.body.url as string };
  }

  it('refuses a tampered token (401), an expired one (401) and one for the other purpose (403)', async () => {
    const { t, pending, uploaded, downloadUrl } = await pendingAndUploaded();
    const token = pathOf(pending.upload_url).split('/').pop()!;
    const flipped = token.slice(0, -2) + (token.at(-2) === 'A' ? 'B' : 'A') + token.at(-1);
    const tampered = await uploadBytes(api.url, `/api/v2/documents/uploads/${flipped}`, 'pending');
    expect([tampered.status, tampered.body.error.code]).toEqual([401, 'authentication_error']);
    // Another document's id under a valid-looking signature is as unknown as garbage.
    const [head, , sig] = token.split('.');
    const forged = `${head}.${Buffer.from(JSON.stringify({ d: uploaded, w: t.workspace, p: 'download', e: 9999999999 })).toString('base64url')}.${sig}`;
    expect((await fetch(`${api.url}/api/v2/documents/downloads/${forged}`)).status).toBe(401);

    const expired = signGrant({ document: pending.id, workspace: t.workspace, purpose: 'upload', expiresAt: Math.floor(Date.now() / 1000) - 1 }, config().signingSecret);
    const late = await uploadBytes(api.url, `/api/v2/documents/uploads/${expired}`, 'pending');
    expect([late.status, late.body.error.code]).toEqual([401, 'authentication_error']);
    expect(late.body.error.message).toContain('expired');

    const downloadToken = pathOf(downloadUrl).split('/').pop()!;
    const wrongWay = await uploadBytes(api.url, `/api/v2/documents/uploads/${downloadToken}`, 'uploaded');
    expect([wrongWay.status, wrongWay.body.error.code]).toEqual([403, 'permission_denied']);
    const wrongWayBack = await fetch(`${api.url}/api/v2/documents/downloads/${token}`);
    expect(wrongWayBack.status).toBe(403);
  });

  it('redeems an upload grant once: a replayed upload is 409 and keeps the first bytes', async () => {
    const t = await tenant({ scopes: SCOPES });
    const created = await createDocument(api.url, t.key, 'once.txt', 'text/plain', Buffer.from('first'));
    expect((await uploadBytes(api.url, created.body.upload_url, 'first')).status).toBe(200);
    const replay = await uploadBytes(api.url, created.body.upload_url, 'other');
    expect([replay.status, replay.body.error.code]).toEqual([409, 'document_already_uploaded']);
    const content = await fetch(`${api.url}/api/v2/documents/${created.body.id}/content`, { headers: { authorization: `Bearer ${t.key}` } });
    expect(await content.text()).toBe('first');
  });

  it('takes one upload of a document at a time: another meanwhile is 409 before a byte is stored, and one that failed lets the next begin', async () => {
    const t = await tenant({ scopes: SCOPES });
    const bytes = Buffer.alloc(64 * 1024, 'a');
    const created = await createDocument(api.url, t.key, 'big.txt', 'text/plain', bytes);
    // The first upload sends half its bytes and waits: it holds the document until it ends.
    const url = new URL(pathOf(created.body.upload_url), api.url);
    const first = http.request({ host: url.hostname, port: url.port, path: url.pathname, method: 'PUT', headers: { 'content-length': bytes.length, 'content-type': 'application/octet-stream' } });
    const firstAnswer = new Promise<http.IncomingMessage>((resolve, reject) => first.on('response', resolve).on('error', reject));
    first.write(bytes.subarray(0, bytes.length / 2));
    await until(async () => ((await db().query('SELECT upload_started_at FROM documents WHERE public_id = $1', { bind: [created.body.id], type: QueryTypes.SELECT })) as { upload_started_at: Date | null }[])[0].upload_started_at ?? undefined, 'the first upload to begin');
    const second = await uploadBytes(api.url, created.body.upload_url, bytes);
    expect(second.status).toBe(409);
    expect(second.body.error.code).toBe('document_upload_in_progress');
    // The first is cut off: it failed, and the next upload is taken whole.
    first.destroy();
    await firstAnswer.catch(() => undefined);
    const third = await until(async () => {
      const res = await uploadBytes(api.url, created.body.upload_url, bytes);
      return res.status === 409 && res.body.error.code === 'document_upload_in_progress' ? undefined : res;
    }, 'the cut-off upload to end');
    expect(third.status).toBe(200);
    expect(third.body).toMatchObject({ status: 'uploaded', sha256: sha256(bytes) });
  });

  it("refuses a document past the workspace's storage quota (409 storage_quota_exceeded), creating nothing; a deletion makes room", async () => {
    const t = await tenant({ scopes: SCOPES });
    process.env.DOCUMENT_STORAGE_QUOTA_BYTES = '100';
    resetConfig();
    try {
      const a = await createDocument(api.url, t.key, 'a.txt', 'text/plain', Buffer.alloc(60, 'a'));
      expect(a.status).toBe(201);
      const b = await createDocument(api.url, t.key, 'b.txt', 'text/plain', Buffer.alloc(41, 'b'));
      expect(b.status).toBe(409);
      expect(b.body.error.code).toBe('storage_quota_exceeded');
      expect((await call(api.url, 'GET', '/api/v2/documents', { key: t.key })).body.data.map((d: { id: string }) => d.id)).toEqual([a.body.id]);
      // Pending documents count as declared: at once, two of 50 fit and a third does not.
      expect((await call(api.url, 'DELETE', `/api/v2/documents/${a.body.id}`, { key: t.key })).status).toBe(200);
      const at = await Promise.all([0, 1, 2].map((i) => createDocument(api.url, t.key, `c${i}.txt`, 'text/plain', Buffer.alloc(50, 'c'))));
      expect(at.map((r) => r.status).sort()).toEqual([201, 201, 409]);
    } finally {
      delete process.env.DOCUMENT_STORAGE_QUOTA_BYTES;
      resetConfig();
    }
  });

  it('gives 404 for a grant whose document was deleted, and the delete removes the bytes', async () => {
    const { t, pending, uploaded, downloadUrl } = await pendingAndUploaded();
    for (const id of [pending.id, uploaded]) {
      const deleted = await call(api.url, 'DELETE', `/api/v2/documents/${id}`, { key: t.key });
      expect(deleted.body).toEqual({ id, object: 'document', deleted: true });
    }
    const upload = await uploadBytes(api.url, pending.upload_url, 'pending');
    expect([upload.status, upload.body.error.code]).toEqual([404, 'document_not_found']);
    const download = await fetch(api.url + pathOf(downloadUrl));
    expect(download.status).toBe(404);
    expect(await partsOf(uploaded)).toBe(0);
    expect((await call(api.url, 'GET', `/api/v2/documents/${uploaded}`, { key: t.key })).status).toBe(404);
  });

  it('can be issued afresh for a pending document (its first one may have expired), and not once it is uploaded', async () => {
    const t = await tenant({ scopes: SCOPES });
    const created = await createDocument(api.url, t.key, 'later.txt', 'text/plain', Buffer.from('later'));
    const fresh = await call(api.url, 'POST', `/api/v2/documents/${created.body.id}/uploads`, { key: t.key });
    expect(fresh.status).toBe(201);
    expect(fresh.body).toMatchObject({ object: 'document.upload', document: created.body.id });
    expect((await uploadBytes(api.url, fresh.body.url, 'later')).status).toBe(200);
    const again = await call(api.url, 'POST', `/api/v2/documents/${created.body.id}/uploads`, { key: t.key });
    expect([again.status, again.body.error.code]).toEqual([409, 'document_already_uploaded']);
  });

  it('are not issued for a document without content (409)', async () => {
    const { t, pending } = await pendingAndUploaded();
    const refused = await call(api.url, 'POST', `/api/v2/documents/${pending.id}/downloads`, { key: t.key });
    expect([refused.status, refused.body.error.code]).toEqual([409, 'document_not_uploaded']);
  });
});

describe("another workspace's document", () => {
  it('answers every endpoint exactly like a missing one', async () => {
    const owner = await tenant({ scopes: SCOPES });
    const id = await uploadedDocument(api.url, owner.key, 'secret.txt', 'text/plain', Buffer.from('secret'));
    const stranger = await tenant({ scopes: [...SCOPES, 'knowledge:write'] });
    const missing = 'doc_01gggggggggggggggggggggggg';
    for (const [method, path, body] of [
      ['GET', '/api/v2/documents/ID', undefined],
      ['GET', '/api/v2/documents/ID/content', undefined],
      ['POST', '/api/v2/documents/ID/downloads', undefined],
      ['DELETE', '/api/v2/documents/ID', undefined],
      ['POST', '/api/v2/knowledge/ingestions', { document: 'ID', collection: 'c' }],
    ] as const) {
      const of = (doc: string) => call(api.url, method, path.replace('ID', doc), { key: stranger.key, ...(body && { body: { ...body, document: doc } }) });
      const [theirs, none] = [await of(id), await of(missing)];
      expect(theirs.status).toBe(404);
      expect(withoutRequestId(theirs.text)).toBe(withoutRequestId(none.text));
    }
    // Still there for its owner.
    expect((await call(api.url, 'GET', `/api/v2/documents/${id}`, { key: owner.key })).status).toBe(200);
  });
});
