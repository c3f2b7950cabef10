import { answerOf, call, type Answer } from './stack';

/** The path of a transfer URL the API handed out (its host is PUBLIC_BASE_URL, not the test's API). */
export function pathOf(url: string): string {
  return url.startsWith('/') ? url : new URL(url).pathname;
}

/** Creates a document record for these bytes; the answer carries its upload_url. */
export async function createDocument(api: string, key: string, name: string, mimeType: string, bytes: Buffer): Promise<Answer> {
  return call(api, 'POST', '/api/v2/documents', { key, body: { name, mime_type: mimeType, size_bytes: bytes.length } });
}

/** Redeems an upload URL with raw bytes (PUT unless told otherwise). */
export async function uploadBytes(api: string, uploadUrl: string, bytes: Buffer | string, method: 'PUT' | 'POST' = 'PUT', headers: Record<string, string> = {}): Promise<Answer> {
  return answerOf(await fetch(api + pathOf(uploadUrl), { method, body: bytes, headers: { 'content-type': 'application/octet-stream', ...headers } }));
}

/** A document created and uploaded: its id. */
export async function uploadedDocument(api: string, key: string, name: string, mimeType: string, bytes: Buffer): Promise<string> {
  const created = await createDocument(api, key, name, mimeType, bytes);
  if (created.status !== 201) throw new Error(`document not created: ${created.status} ${created.text}`);
  const uploaded = await uploadBytes(api, created.body.upload_url, bytes);
  if (uploaded.status !== 200) throw new Error(`document not uploaded: ${uploaded.status} ${uploaded.text}`);
  return created.body.id;
}

/** Ingests a document into a collection and waits for the ingestion to finish (completed or failed). */
export async function ingest(api: string, key: string, document: string, collection: string): Promise<any> {
  const started = await call(api, 'POST', '/api/v2/knowledge/ingestions', { key, body: { document, collection } });
  if (started.status !== 202) throw new Error(`ingestion not accepted: ${started.status} ${started.text}`);
  for (let i = 0; i < 600; i++) {
    const now = await call(api, 'GET', `/api/v2/knowledge/ingestions/${started.body.id}`, { key });
    if (now.body.status === 'completed' || now.body.status === 'failed') return now.body;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`ingestion ${started.body.id} did not finish`);
}
