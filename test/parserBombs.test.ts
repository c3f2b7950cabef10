import { Client, Connection } from '@temporalio/client';
import { dataConverter } from '../infra/payloadCodec';
import { uploadedDocument } from './support/documents';
import { docxBomb, htmlBomb, pdfBomb } from './support/parserBombs';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { call, closeAll, tenant, until, useApi } from './support/stack';

/**
 * Hardening #5: a small file that inflates past its parser's limits (memory as a DOCX or PDF, CPU as
 * nested HTML) fails its own ingestion, for good and at the first attempt, in a parse process of its
 * own: the worker beside it, with the runs it holds, goes on.
 */
const api = useApi();
const SCOPES = ['documents:create', 'knowledge:write', 'knowledge:read', 'responses:create'];
const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

let connection: Connection;
let client: Client;
beforeAll(async () => {
  connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS });
  client = new Client({ connection, dataConverter });
});
afterAll(async () => {
  await connection.close();
  await closeAll();
});

/**
 * The ingestion once it has ended. A bomb's parse uses all of PARSE_CPU_S at a low priority, which on
 * a loaded machine can take minutes of wall time, up to the parse's own 5-minute bound: this waits
 * past that, so how long it takes never decides the outcome.
 */
async function ended(key: string, id: string): Promise<any> {
  for (let i = 0; i < 1600; i++) {
    const now = await call(api.url, 'GET', `/api/v2/knowledge/ingestions/${id}`, { key });
    if (now.body.status === 'completed' || now.body.status === 'failed') return now.body;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`ingestion ${id} did not end`);
}

/** The parse processes running now (pgrep exits 1 when there is none). */
function parseProcesses(): string[] {
  try {
    return execFileSync('pgrep', ['-f', 'parseProcess.js'], { encoding: 'utf8' }).split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

describe('parser bombs', () => {
  it('a DOCX, a PDF and an HTML that inflate each fail their ingestion once (invalid_request), and a run completes meanwhile', async () => {
    const t = await tenant({ scopes: SCOPES });
    const bombs: [string, string, Buffer, string][] = [
      ['bomb.docx', DOCX, await docxBomb(), 'DOCX'],
      ['bomb.pdf', 'application/pdf', await pdfBomb(), 'PDF'],
      ['bomb.html', 'text/html', htmlBomb(), 'HTML'],
    ];
    const ingestions: string[] = [];
    for (const [name, type, bytes] of bombs) {
      expect(bytes.length).toBeLessThan(4 * 1024 * 1024);
      const document = await uploadedDocument(api.url, t.key, name, type, bytes);
      const started = await call(api.url, 'POST', '/api/v2/knowledge/ingestions', { key: t.key, body: { document, collection: 'bombs' } });
      expect(started.status).toBe(202);
      ingestions.push(started.body.id);
    }

    // A parse reads a hostile file: its process has no secret in its environment, only PATH.
    const environment = await until(async () => {
      for (const pid of parseProcesses()) {
        try {
          return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean).map((entry) => entry.split('=')[0]);
        } catch {
          // Ended meanwhile: look again.
        }
      }
      return undefined;
    }, 'a parse process to read');
    expect(environment).toEqual(['PATH']);

    // The worker that parses them holds this run too.
    const run = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'still here?' } });
    expect(run.status).toBe(200);
    expect(run.body.status).toBe('completed');

    for (const [i, id] of ingestions.entries()) {
      const failed = await ended(t.key, id);
      expect(failed.status).toBe('failed');
      expect(failed.error.code).toBe('invalid_request');
      expect(failed.error.message).toContain(`could not be read as ${bombs[i][3]}`);
      // Once: the parse's failure is the file's, never retried as if the service had failed.
      const history = await client.workflow.getHandle(id).fetchHistory();
      const attempts = (history.events ?? []).filter((e) => e.activityTaskStartedEventAttributes).map((e) => e.activityTaskStartedEventAttributes!.attempt);
      expect(attempts.length).toBeGreaterThan(0);
      expect(attempts.every((attempt) => attempt === 1)).toBe(true);
    }

    // And the worker still ingests.
    const fine = await uploadedDocument(api.url, t.key, 'fine.html', 'text/html', Buffer.from('<p>still indexing</p>'));
    const started = await call(api.url, 'POST', '/api/v2/knowledge/ingestions', { key: t.key, body: { document: fine, collection: 'bombs' } });
    expect((await ended(t.key, started.body.id)).status).toBe('completed');
  }, 30 * 60_000); // past ended()'s own wait, for each of the four ingestions
});
