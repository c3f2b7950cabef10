import { createHash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { invalidRequest, ServiceError } from '../../domain/errors';

/**
 * Passes an upload's bytes through to storage while counting and hashing them. The body must be
 * exactly the size the document declared: one byte more fails the stream at once (413), so an
 * oversized upload is never read to its end; ending short fails it too (400). Storage that sees the
 * stream fail keeps nothing.
 */
export class UploadMeter extends Transform {
  private readonly hash = createHash('sha256');
  private received = 0;
  /** Why the stream failed, when it was this meter's refusal (not the client going away). */
  failure: ServiceError | undefined;

  constructor(private readonly size: number) {
    super();
  }

  _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.received += chunk.length;
    if (this.received > this.size) return done((this.failure = tooLarge(this.size)));
    this.hash.update(chunk);
    done(null, chunk);
  }

  _flush(done: TransformCallback): void {
    if (this.received < this.size) return done((this.failure = invalidRequest(`The upload ended after ${this.received} bytes; the document declared size_bytes ${this.size}.`)));
    done();
  }

  /** The SHA-256 of the bytes, hex: only once the stream has ended. */
  digest(): string {
    return this.hash.digest('hex');
  }
}

export function tooLarge(size: number): ServiceError {
  return new ServiceError('payload_too_large', `The upload is larger than the document's declared size_bytes (${size}).`);
}
