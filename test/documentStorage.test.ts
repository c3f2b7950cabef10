import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { answers, freePort } from '../workers/temporalDevServer';
import { TEST_BUCKET } from './stack/s3Server';
import { createDocument, ingest, pathOf, uploadBytes, uploadedDocument } from './support/documents';
import { call, tenant, until, useApi } from './support/stack';

// This file's API stores new uploads in the S3-compatible server the test setup started (moto).
process.env.DOCUMENT_STORAGE = 's3';

const api = useApi();
const SCOPES = ['documents:create', 'documents:read', 'documents:delete', 'knowledge:write', 'knowledge:read', 'responses:create'];
const s3 = () => new S3Client({ region: 'us-east-1', endpoint: process.env.S3_ENDPOINT, forcePathStyle: true });

async function objectsOf(workspace: string, document: string): Promise<string[]> {
  const listed = await s3().send(new ListObjectsV2Command({ Bucket: TEST_BUCKET, Prefix: `documents/${workspace}/${document}/` }));
  return (listed.Contents ?? []).map((o) => o.Key!);
}

describe('the S3 document store', () => {
  it('keeps uploads in the bucket, serves them back, lets a worker ingest them, and removes them with the document', async () => {
    const t = await tenant({ scopes: SCOPES, config: { knowledge: { collections: ['s3docs'] } } });
    const bytes = Buffer.from('Stored in the bucket: the verdigrel clause applies.');
    const id = await uploadedDocument(api.url, t.key, 'bucket.txt', 'text/plain', bytes);
    const [key] = await objectsOf(t.workspace, id);
    const object = await s3().send(new GetObjectCommand({ Bucket: TEST_BUCKET, Key: key }));
    expect(Buffer.from(await object.Body!.transformToByteArray())).toEqual(bytes);

    const content = await fetch(`${api.url}/api/v2/documents/${id}/content`, { headers: { authorization: `Bearer ${t.key}` } });
    expect(Buffer.from(await content.arrayBuffer())).toEqual(bytes);
    expect((await ingest(api.url, t.key, id, 's3docs')).status).toBe('completed');

    expect((await call(api.url, 'DELETE', `/api/v2/documents/${id}`, { key: t.key })).status).toBe(200);
    expect(await objectsOf(t.workspace, id)).toEqual([]);
  });

  it('keeps nothing of an upload that was too long or too short', async () => {
    const t = await tenant({ scopes: SCOPES });
    const created = await createDocument(api.url, t.key, 'bounded.bin', 'application/octet-stream', Buffer.alloc(2048));
    const chunked = (sizes: number[]) =>
      new ReadableStream({
        start(controller) {
          for (const n of sizes) controller.enqueue(new Uint8Array(n));
          controller.close();
        },
      });
    const put = (sizes: number[]) => fetch(api.url + pathOf(created.body.upload_url), { method: 'PUT', body: chunked(sizes), duplex: 'half' } as RequestInit);
    expect((await put([1024, 1024, 1024])).status).toBe(413);
    expect((await put([1024])).status).toBe(400);
    expect(await objectsOf(t.workspace, created.body.id)).toEqual([]);
    expect((await uploadBytes(api.url, created.body.upload_url, Buffer.alloc(2048))).status).toBe(200);
    expect(await objectsOf(t.workspace, created.body.id)).toHaveLength(1);
  });
});

describe('a 50 MB upload', () => {
  let child: ChildProcess | undefined;
  afterAll(() => child?.kill('SIGKILL'));

  const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

  it.each(['postgres', 's3'])('streams through the API (%s store) with its RSS flat', async (storage) => {
    const t = await tenant({ scopes: SCOPES });
    const port = await freePort();
    // As npm run start:api runs it.
    child = spawn(process.execPath, ['--max-old-space-size=160', path.join(__dirname, '../dist/api/server.js')], { env: { ...process.env, PORT: String(port), DOCUMENT_STORAGE: storage }, stdio: ['ignore', 'ignore', 'inherit'] });
    await until(async () => ((await answers(port)) ? true : undefined), 'the API process to listen');
    const url = `http://127.0.0.1:${port}`;
    const upload = (size: number, onProgress: () => void = () => undefined) => async () => {
      const created = await call(url, 'POST', '/api/v2/documents', { key: t.key, body: { name: 'big.bin', mime_type: 'application/octet-stream', size_bytes: size } });
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(url + pathOf(created.body.upload_url), { method: 'PUT', headers: { 'content-length': String(size) } }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode!));
        });
        req.on('error', reject);
        const piece = Buffer.alloc(256 * 1024, 7);
        let sent = 0;
        const write = () => {
          while (sent < size) {
            onProgress();
            sent += piece.length;
            if (!req.write(piece)) return void req.once('drain', write);
          }
          req.end();
        };
        write();
      });
      expect(status).toBe(200);
      const read = await call(url, 'GET', `/api/v2/documents/${created.body.id}`, { key: t.key });
      expect(read.body).toMatchObject({ status: 'uploaded', size_bytes: size });
    };
    // Warm: the first upload loads code and fills pools and buffers that later ones reuse.
    await upload(4 * 1024 * 1024)();
    const before = rssOf(child.pid!);
    let peak = before;
    await upload(50 * 1024 * 1024, () => (peak = Math.max(peak, rssOf(child!.pid!))))();
    peak = Math.max(peak, rssOf(child.pid!));
    // Buffering the upload would add 50 MB at least; streaming adds the parts in flight.
    // Holding the upload would add its 50 MB at least. Streaming holds one part at a time; what it adds
    // is garbage (socket reads, driver buffers), which V8 collects lazily: 15-30 MB here.
    expect(peak - before).toBeLessThan(40 * 1024 * 1024);
    child.kill('SIGKILL');
  });
});
