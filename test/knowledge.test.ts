import { Document, Packer, Paragraph, TextRun } from 'docx';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { Chunker, CHUNK_MAX_CHARS, CHUNK_OVERLAP_CHARS } from '../domain/chunking';
import { db } from '../db/sequelize';
import { ingest, uploadedDocument } from './support/documents';
import { call, providerRequests, tenant, useApi, type Tenant } from './support/stack';

const api = useApi();
const SCOPES = ['documents:create', 'documents:read', 'documents:delete', 'knowledge:write', 'knowledge:read', 'responses:create', 'logs:read'];

async function pdfOf(pages: string[]): Promise<Buffer> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  for (const text of pages) pdf.addPage([595, 842]).drawText(text, { x: 50, y: 780, size: 12, font });
  return Buffer.from(await pdf.save());
}

async function docxOf(paragraphs: string[]): Promise<Buffer> {
  const doc = new Document({ sections: [{ children: paragraphs.map((p) => new Paragraph({ children: [new TextRun(p)] })) }] });
  return Packer.toBuffer(doc);
}

/** What the model was sent on the tenant's last call. */
async function lastPrompt(t: Tenant): Promise<{ role: string; content: string }[]> {
  const requests = await providerRequests(t.model);
  return requests.at(-1)!.body.messages;
}

const ask = (t: Tenant, input: string, extra: Record<string, unknown> = {}) => call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input, ...extra } });
const knowledgeAgent = (collections = ['handbook'], policy?: string) => tenant({ scopes: SCOPES, config: { instructions: 'Answer from the handbook.', knowledge: { collections, ...(policy && { policy }) } } });

describe('chunking', () => {
  it('cuts long text into overlapping chunks no longer than the maximum, losing no text', () => {
    const words = Array.from({ length: 3000 }, (_, i) => `word${i}`);
    const chunker = new Chunker();
    const chunks = [...chunker.push(words.slice(0, 1000).join(' ') + ' '), ...chunker.push(words.slice(1000).join(' ')), ...chunker.end()];
    expect(chunks.length).toBeGreaterThan(10);
    for (const c of chunks) expect(c.length).toBeLessThanOrEqual(CHUNK_MAX_CHARS);
    for (const w of words) expect(chunks.some((c) => c.split(' ').includes(w))).toBe(true);
    // Consecutive chunks share the overlap, which starts on a word.
    const overlap = chunks[1].slice(0, chunks[1].indexOf(chunks[0].split(' ').at(-1)!) + chunks[0].split(' ').at(-1)!.length);
    expect(chunks[0].endsWith(overlap)).toBe(true);
    expect(overlap.length).toBeGreaterThan(CHUNK_OVERLAP_CHARS - 20);
    expect(overlap.length).toBeLessThanOrEqual(CHUNK_OVERLAP_CHARS);
  });
});

describe('ingestion of each supported format', () => {
  it('extracts, chunks and indexes text, Markdown, HTML, PDF and DOCX, and retrieval hands the passage to the model', async () => {
    const t = await knowledgeAgent();
    const formats: [string, string, Buffer, string][] = [
      ['notes.txt', 'text/plain', Buffer.from('The zephyrine valve must be checked weekly.'), 'zephyrine'],
      ['guide.md', 'text/markdown', Buffer.from('# Setup\n\nThe *quorvex* adapter ships in the blue box.'), 'quorvex'],
      ['page.html', 'text/html', Buffer.from('<html><head><script>var hidden = "scriptword";</script></head><body><h1>Refunds</h1><p>Refunds take <b>blintzovar</b> days.</p></body></html>'), 'blintzovar'],
      ['manual.pdf', 'application/pdf', await pdfOf(['Chapter one is about setup.', 'The marravine lever resets the unit.']), 'marravine'],
      ['policy.docx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', await docxOf(['Holidays', 'Staff get tessaroom leave in August.']), 'tessaroom'],
    ];
    for (const [name, type, bytes, word] of formats) {
      const document = await uploadedDocument(api.url, t.key, name, type, bytes);
      const done = await ingest(api.url, t.key, document, 'handbook');
      expect(done).toMatchObject({ object: 'knowledge.ingestion', document, collection: 'handbook', status: 'completed', error: null, reused: false });
      expect(done.progress.chunks_indexed).toBeGreaterThan(0);
      expect(done.progress.bytes_processed).toBe(bytes.length);

      const answer = await ask(t, `What about ${word}?`);
      expect(answer.status).toBe(200);
      const prompt = await lastPrompt(t);
      const context = prompt.find((m) => m.content.startsWith('Knowledge base passages'));
      expect(context?.role).toBe('user');
      expect(context!.content).toContain(word);
      expect(context!.content).toContain(`document ${document}`);
      // Apart from the instructions, which stay the agent's own.
      expect(prompt[0]).toEqual({ role: 'system', content: 'Answer from the handbook.' });
    }
    // Script content is not text of the page.
    await ask(t, 'scriptword');
    expect((await lastPrompt(t)).some((m) => m.content.startsWith('Knowledge base passages'))).toBe(false);
  });

  it('fails an ingestion whose bytes are not what the type says, and refuses types it cannot read', async () => {
    const t = await knowledgeAgent();
    const fake = await uploadedDocument(api.url, t.key, 'fake.pdf', 'application/pdf', Buffer.from('just text, renamed'));
    const failed = await ingest(api.url, t.key, fake, 'handbook');
    expect(failed.status).toBe('failed');
    expect(failed.error.code).toBe('invalid_request');
    expect(failed.error.message).toContain('PDF');
    const image = await uploadedDocument(api.url, t.key, 'x.png', 'image/png', Buffer.from([0x89, 0x50, 0x4e, 0x47]));
    const refused = await call(api.url, 'POST', '/api/v2/knowledge/ingestions', { key: t.key, body: { document: image, collection: 'handbook' } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toContain('cannot be ingested');
  });
});

describe('a document that inflates far beyond its size', () => {
  it('fails its ingestion alone (invalid_request), and the worker goes on ingesting', async () => {
    const t = await knowledgeAgent();
    // About 9 million characters of text in a DOCX of well under a megabyte.
    const bomb = await docxOf(Array.from({ length: 9_000 }, () => 'a'.repeat(1_000)));
    expect(bomb.length).toBeLessThan(1024 * 1024);
    const document = await uploadedDocument(api.url, t.key, 'bomb.docx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', bomb);
    const failed = await ingest(api.url, t.key, document, 'handbook');
    expect(failed.status).toBe('failed');
    expect(failed.error.code).toBe('invalid_request');
    const fine = await uploadedDocument(api.url, t.key, 'fine.txt', 'text/plain', Buffer.from('still indexing'));
    expect((await ingest(api.url, t.key, fine, 'handbook')).status).toBe('completed');
  });
});

describe('re-ingestion', () => {
  it('does no work for the same bytes, and replaces the chunks atomically when the pipeline changed', async () => {
    const t = await knowledgeAgent();
    const text = Array.from({ length: 40 }, (_, i) => `Paragraph ${i} mentions the gallowind procedure in detail.`).join('\n\n');
    const document = await uploadedDocument(api.url, t.key, 'long.txt', 'text/plain', Buffer.from(text));
    const first = await ingest(api.url, t.key, document, 'handbook');
    const chunkIds = async () =>
      ((await db().query('SELECT c.public_id FROM knowledge_chunks c JOIN documents d ON d.id = c.document_id WHERE d.public_id = $1 ORDER BY c.seq', { bind: [document] }))[0] as { public_id: string }[]).map((r) => r.public_id);
    const before = await chunkIds();
    expect(before.length).toBe(first.progress.chunks_indexed);

    const again = await ingest(api.url, t.key, document, 'handbook');
    expect(again).toMatchObject({ status: 'completed', reused: true, progress: { chunks_indexed: first.progress.chunks_indexed } });
    expect(await chunkIds()).toEqual(before);

    // As after a deploy with a new extraction or chunking pipeline: the same bytes are indexed again.
    await db().query("UPDATE knowledge_ingestions SET pipeline = 'an-older-pipeline' WHERE public_id = $1", { bind: [first.id] });
    const reindexed = await ingest(api.url, t.key, document, 'handbook');
    expect(reindexed).toMatchObject({ status: 'completed', reused: false });
    const after = await chunkIds();
    expect(after.length).toBe(before.length);
    expect(after.some((id) => before.includes(id))).toBe(false);
    await ask(t, 'gallowind');
    expect((await lastPrompt(t)).find((m) => m.content.startsWith('Knowledge base passages'))!.content).toContain(after[0]);
  });
});

describe('listing ingestions', () => {
  it('pages with cursor, filters by status (unknown is 400) and by document (another workspace gives an empty page)', async () => {
    const t = await knowledgeAgent();
    const a = await uploadedDocument(api.url, t.key, 'a.txt', 'text/plain', Buffer.from('alpha text'));
    const b = await uploadedDocument(api.url, t.key, 'b.txt', 'text/plain', Buffer.from('beta text'));
    const bad = await uploadedDocument(api.url, t.key, 'c.pdf', 'application/pdf', Buffer.from('not a pdf'));
    const ids = [(await ingest(api.url, t.key, a, 'one')).id, (await ingest(api.url, t.key, b, 'one')).id, (await ingest(api.url, t.key, bad, 'one')).id].reverse();

    const list = (query: string, key = t.key) => call(api.url, 'GET', `/api/v2/knowledge/ingestions${query}`, { key });
    const page1 = await list('?limit=2');
    expect(page1.body.data.map((i: { id: string }) => i.id)).toEqual(ids.slice(0, 2));
    const page2 = await list(`?limit=2&cursor=${page1.body.next_cursor}`);
    expect(page2.body.data.map((i: { id: string }) => i.id)).toEqual(ids.slice(2));
    expect(page2.body.next_cursor).toBeNull();

    expect((await list('?status=failed')).body.data.map((i: { id: string }) => i.id)).toEqual([ids[0]]);
    expect((await list('?status=completed')).body.data).toHaveLength(2);
    const unknown = await list('?status=done');
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.message).toBe('status must be one of queued, running, completed, failed.');
    expect((await list('?colour=red')).status).toBe(400);

    expect((await list(`?document=${a}`)).body.data.map((i: { document: string }) => i.document)).toEqual([a]);
    const stranger = await knowledgeAgent();
    const foreign = await list(`?document=${a}`, stranger.key);
    expect([foreign.status, foreign.body.data]).toEqual([200, []]);
    const theirs = await call(api.url, 'GET', `/api/v2/knowledge/ingestions/${ids[0]}`, { key: stranger.key });
    const missing = await call(api.url, 'GET', '/api/v2/knowledge/ingestions/ing_01gggggggggggggggggggggggg', { key: stranger.key });
    expect([theirs.status, theirs.body.error.code]).toEqual([404, 'ingestion_not_found']);
    expect(theirs.text.replace(/req_[0-9a-z]+/, '')).toBe(missing.text.replace(/req_[0-9a-z]+/, ''));
  });
});

describe('knowledge_policy and resource_id', () => {
  async function twoDocuments() {
    const t = await knowledgeAgent(['handbook']);
    const first = await uploadedDocument(api.url, t.key, 'first.txt', 'text/plain', Buffer.from('The orbisant rule: first edition text.'));
    const second = await uploadedDocument(api.url, t.key, 'second.txt', 'text/plain', Buffer.from('The orbisant rule: second edition text.'));
    await ingest(api.url, t.key, first, 'handbook');
    await ingest(api.url, t.key, second, 'handbook');
    return { t, first, second };
  }

  it('none skips retrieval; auto retrieves, and the log records ids and ranks, never text', async () => {
    const { t, first, second } = await twoDocuments();
    const skipped = await ask(t, 'orbisant?', { options: { knowledge_policy: 'none' } });
    expect(skipped.status).toBe(200);
    expect((await lastPrompt(t)).map((m) => m.content).join('\n')).not.toContain('first edition');

    const retrieved = await ask(t, 'orbisant?');
    expect(retrieved.status).toBe(200);
    const logs = await call(api.url, 'GET', '/api/v2/logs?limit=2', { key: t.key });
    const [withKnowledge, without] = logs.body.data;
    expect(without.knowledge).toEqual([]);
    expect(withKnowledge.knowledge.map((k: { document: string }) => k.document).sort()).toEqual([first, second].sort());
    expect(withKnowledge.knowledge.map((k: { rank: number }) => k.rank)).toEqual([1, 2]);
    for (const k of withKnowledge.knowledge) expect(Object.keys(k).sort()).toEqual(['chunk', 'document', 'rank']);
    expect(JSON.stringify(logs.body)).not.toContain('edition');
  });

  it('narrows retrieval to the document request_context.resource_id names', async () => {
    const { t, second } = await twoDocuments();
    const narrowed = await ask(t, 'orbisant?', { request_context: { resource_id: second } });
    expect(narrowed.status).toBe(200);
    const context = (await lastPrompt(t)).find((m) => m.content.startsWith('Knowledge base passages'))!.content;
    expect(context).toContain('second edition');
    expect(context).not.toContain('first edition');
  });

  it("refuses with 403 invalid_context a resource_id the caller cannot reach, or outside the agent's knowledge", async () => {
    const { t } = await twoDocuments();
    const other = await knowledgeAgent();
    const theirs = await uploadedDocument(api.url, other.key, 'theirs.txt', 'text/plain', Buffer.from('orbisant elsewhere'));
    await ingest(api.url, other.key, theirs, 'handbook');
    const loose = await uploadedDocument(api.url, t.key, 'loose.txt', 'text/plain', Buffer.from('orbisant, never ingested'));
    for (const resource of [theirs, loose]) {
      const refused = await ask(t, 'orbisant?', { request_context: { resource_id: resource } });
      expect([refused.status, refused.body.error.code]).toEqual([403, 'invalid_context']);
    }
  });

  it('required fails with 503 knowledge_unavailable and no model call when the agent has no knowledge', async () => {
    const t = await tenant({ scopes: SCOPES });
    const refused = await ask(t, 'anything?', { options: { knowledge_policy: 'required' } });
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ error: { code: 'knowledge_unavailable' }, status: 'failed' });
    // A configured collection that holds nothing yet is no knowledge either.
    const empty = await knowledgeAgent(['nothing-yet'], 'required');
    const alsoRefused = await ask(empty, 'anything?');
    expect([alsoRefused.status, alsoRefused.body.error.code]).toEqual([503, 'knowledge_unavailable']);
    expect(await providerRequests(t.model)).toEqual([]);
    expect(await providerRequests(empty.model)).toEqual([]);
    // A run that retrieves nothing relevant still answers.
    const { t: stocked } = await twoDocuments();
    expect((await ask(stocked, 'unrelated words', { options: { knowledge_policy: 'required' } })).status).toBe(200);
  });
});
