import { Transform, type Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { DeleteObjectsCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client, DeleteObjectCommand } from '@aws-sdk/client-s3';
import { config } from '../infra/config';
import type { DocumentStore, StoredObject } from './documentStore';

let client: S3Client | undefined;

function s3(): S3Client {
  const c = config().s3;
  client ??= new S3Client({
    region: c.region,
    ...(c.endpoint && { endpoint: c.endpoint }),
    forcePathStyle: c.forcePathStyle,
    // Checksums only where S3 requires them: a streamed body of known length is sent as is, in one pass.
    // (The default streams aws-chunked with a trailing checksum: correct, but many times slower on large bodies.)
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // An idle connection fails the request; a large upload may take long, so there is no wall-clock limit.
    requestHandler: { socketTimeout: 30_000 },
    // The SDK warns on console about aborted streaming requests; an aborted upload is reported by the API instead.
    logger: { debug() {}, info() {}, warn() {}, error() {} },
  });
  return client;
}

/** Every upload of a document under one prefix, so the others can be listed and removed. */
const prefixOf = (o: StoredObject) => `documents/${o.workspace}/${o.document}/`;
const keyOf = (o: StoredObject) => `${prefixOf(o)}${o.uploadKey}`;

/**
 * The SDK pipes the body into its request and never sees the body's errors: a body that failed would
 * crash the process or leave the request waiting forever. So a failing body, or one of the wrong
 * length, aborts the request instead (S3 then keeps nothing).
 */
function guarded(body: Readable, size: number, abort: AbortController): Readable {
  let seen = 0;
  body.on('error', (err) => abort.abort(err));
  return body.pipe(
    new Transform({
      transform(chunk: Buffer, _encoding, done) {
        seen += chunk.length;
        if (seen > size) {
          abort.abort(new Error(`body longer than ${size} bytes`));
          return done();
        }
        done(null, chunk);
      },
      flush(done) {
        if (seen !== size) abort.abort(new Error(`body ended after ${seen} of ${size} bytes`));
        else done();
      },
    }),
  );
}

/** Removes the document's uploads, but `kept`. A document has few (one per upload attempt): one listing holds them. */
async function removeUnder(bucket: string, object: StoredObject, kept?: string): Promise<void> {
  const listed = await s3().send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefixOf(object) }));
  const keys = (listed.Contents ?? []).map((o) => o.Key!).filter((key) => key !== kept);
  if (keys.length > 0) await s3().send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: keys.map((Key) => ({ Key })) } }));
}

/** An S3-compatible bucket (S3_BUCKET, S3_ENDPOINT, S3_REGION, S3_FORCE_PATH_STYLE). */
export function s3Store(): DocumentStore {
  const bucket = config().s3.bucket;
  return {
    name: 's3',

    async write(object: StoredObject, body: Readable, size: number): Promise<void> {
      const abort = new AbortController();
      await s3().send(new PutObjectCommand({ Bucket: bucket, Key: keyOf(object), Body: guarded(body, size, abort), ContentLength: size }), { abortSignal: abort.signal });
      // S3 answers once it has `size` bytes; the body must also have ended there (not gone on and failed).
      await finished(body);
    },

    async read(object: StoredObject): Promise<Readable> {
      const reply = await s3().send(new GetObjectCommand({ Bucket: bucket, Key: keyOf(object) }));
      return reply.Body as Readable;
    },

    async remove(object: StoredObject): Promise<void> {
      await s3().send(new DeleteObjectCommand({ Bucket: bucket, Key: keyOf(object) }));
    },

    removeOthers: (object) => removeUnder(bucket, object, keyOf(object)),
    removeAll: (object) => removeUnder(bucket, object),
  };
}
