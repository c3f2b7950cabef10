import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { PROJECT_ROOT } from '../../infra/projectRoot';
import { answers, freePort } from '../../workers/temporalDevServer';

/** The S3-compatible server workers/setup.sh installs from PyPI (moto's server mode). */
const MOTO_SERVER = path.join(PROJECT_ROOT, '.tools/bin/moto_server');

export const TEST_BUCKET = 'aes-test-documents';

/**
 * A real S3-compatible server for the suite (objects in its memory), with the test bucket created,
 * and the environment the S3 document store reads pointing at it. DOCUMENT_STORAGE stays postgres:
 * the tests of the S3 store choose it for their own API.
 */
export async function startS3Server(): Promise<ChildProcess> {
  const port = await freePort();
  const child = spawn(MOTO_SERVER, ['-H', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-4000);
  });
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`moto_server exited with ${child.exitCode}: ${log}`);
    if (await answers(port)) break;
    if (i === 300) {
      child.kill('SIGKILL');
      throw new Error(`moto_server did not start within 30 s: ${log}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  Object.assign(process.env, {
    S3_ENDPOINT: `http://127.0.0.1:${port}`,
    S3_BUCKET: TEST_BUCKET,
    S3_REGION: 'us-east-1',
    S3_FORCE_PATH_STYLE: '1',
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
  });
  const client = new S3Client({ region: 'us-east-1', endpoint: process.env.S3_ENDPOINT, forcePathStyle: true });
  await client.send(new CreateBucketCommand({ Bucket: TEST_BUCKET }));
  client.destroy();
  return child;
}
