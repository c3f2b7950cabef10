import { PDFDocument, StandardFonts } from 'pdf-lib';
import { uploadedDocument } from './support/documents';
import { call, providerRequests, scriptModel, tenant, until, useApi, type Tenant } from './support/stack';

const api = useApi();
const SCOPES = ['documents:create', 'extractions:create', 'extractions:read', 'logs:read'];
const INVOICE = { type: 'object', properties: { invoice_number: { type: 'string' }, total: { type: 'number' } }, required: ['invoice_number', 'total'], additionalProperties: false };
const NAMES = { type: 'object', properties: { names: { type: 'array', items: { type: 'string' } } }, required: ['names'], additionalProperties: false };

async function pdfOf(lines: string[]): Promise<Buffer> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  const page = pdf.addPage([595, 842]);
  lines.forEach((text, i) => page.drawText(text, { x: 50, y: 780 - i * 20, size: 12, font }));
  return Buffer.from(await pdf.save());
}

const extract = (t: Tenant, body: Record<string, unknown>, headers: Record<string, string> = {}) => call(api.url, 'POST', '/api/v2/extractions', { key: t.key, body, headers });
const finished = (t: Tenant, id: string) =>
  until(async () => {
    const now = await call(api.url, 'GET', `/api/v2/extractions/${id}`, { key: t.key });
    return now.body.status === 'completed' || now.body.status === 'failed' ? now.body : undefined;
  }, `extraction ${id} to finish`);

describe('POST /api/v2/extractions', () => {
  it('extracts structured data from a real PDF with the named agent, as a billed and logged run', async () => {
    const t = await tenant({ scopes: SCOPES });
    const document = await uploadedDocument(api.url, t.key, 'invoice.pdf', 'application/pdf', await pdfOf(['Invoice INV-7', 'Total due: 42.00 EUR']));
    await scriptModel(t.model, [{ text: '{"invoice_number":"INV-7","total":42}' }]);
    const accepted = await extract(t, { document, schema: INVOICE, agent: t.agent, instructions: 'Amounts in euros.' });
    expect(accepted.status).toBe(202);
    expect(accepted.body).toMatchObject({ object: 'extraction', document, agent: t.agent, status: 'queued', result: null });
    const done = await finished(t, accepted.body.id);
    expect(done).toMatchObject({ status: 'completed', result: { invoice_number: 'INV-7', total: 42 }, progress: { segments_total: 1, segments_done: 1 }, error: null });

    const [request] = await providerRequests(t.model);
    const task = request.body.messages.at(-1).content as string;
    expect(task).toContain('Invoice INV-7');
    expect(task).toContain('Amounts in euros.');
    expect(JSON.stringify(request.body.messages[0])).not.toContain('Amounts in euros.');
    const logs = await call(api.url, 'GET', '/api/v2/logs?limit=1', { key: t.key });
    expect(logs.body.data[0]).toMatchObject({ run: done.runs[0], status: 'completed' });
  });

  it('cuts a long document into segments, runs them, and merges what they found', async () => {
    const t = await tenant({ scopes: SCOPES });
    const paragraph = (n: number) => `Paragraph ${n}. ${'Lorem ipsum dolor sit amet. '.repeat(20)}`;
    const text = Array.from({ length: 50 }, (_, n) => paragraph(n)).join('\n\n');
    const document = await uploadedDocument(api.url, t.key, 'long.txt', 'text/plain', Buffer.from(text));
    await scriptModel(t.model, [{ text: '{"names":["ada"]}' }, { text: '{"names":["brian"]}' }, { text: '{"names":["ada","cleo"]}' }]);
    const done = await finished(t, (await extract(t, { document, schema: NAMES, agent: t.agent })).body.id);
    expect(done.status).toBe('completed');
    expect(done.progress).toEqual({ segments_total: 3, segments_done: 3 });
    expect(done.runs).toHaveLength(3);
    expect([...done.result.names].sort()).toEqual(['ada', 'brian', 'cleo']);
  });

  it("uses the workspace's built-in extraction agent when the request names none", async () => {
    const t = await tenant({ scopes: SCOPES });
    const document = await uploadedDocument(api.url, t.key, 'names.txt', 'text/plain', Buffer.from('Present: Zelda.'));
    await scriptModel('default', [{ text: '{"names":["zelda"]}' }]);
    const done = await finished(t, (await extract(t, { document, schema: NAMES })).body.id);
    expect(done).toMatchObject({ status: 'completed', result: { names: ['zelda'] } });
    expect(done.agent).toMatch(/^agt_/);
    expect(done.agent).not.toBe(t.agent);
  });

  it('fails with the run\'s error when a segment still mismatches the schema after its repair', async () => {
    const t = await tenant({ scopes: SCOPES });
    const document = await uploadedDocument(api.url, t.key, 'x.txt', 'text/plain', Buffer.from('Nothing useful.'));
    await scriptModel(t.model, [{ text: '{"names":"none"}' }, { text: '{"names":"still none"}' }]);
    const done = await finished(t, (await extract(t, { document, schema: NAMES, agent: t.agent })).body.id);
    expect(done).toMatchObject({ status: 'failed', result: null, error: { code: 'structured_output_failed' } });
  });

  it('refuses bad input with a 400 naming the problem, an unreadable type, and replays with Idempotent-Replay', async () => {
    const t = await tenant({ scopes: SCOPES });
    expect((await extract(t, { document: 'doc_x', schema: NAMES })).body.error.message).toBe('document must be a document id (doc_…)');
    const text = await uploadedDocument(api.url, t.key, 'a.txt', 'text/plain', Buffer.from('Present: Ann.'));
    expect((await extract(t, { document: text })).body.error.message).toBe('schema is required');
    expect((await extract(t, { document: text, schema: NAMES, colour: 'red' })).body.error.message).toBe('unknown key: colour');
    const image = await uploadedDocument(api.url, t.key, 'a.png', 'image/png', Buffer.from([0x89, 0x50]));
    const unreadable = await extract(t, { document: image, schema: NAMES, agent: t.agent });
    expect(unreadable.status).toBe(400);
    await scriptModel(t.model, [{ text: '{"names":["ann"]}' }]);
    const first = await extract(t, { document: text, schema: NAMES, agent: t.agent }, { 'Idempotency-Key': 'extract-once' });
    const again = await extract(t, { document: text, schema: NAMES, agent: t.agent }, { 'Idempotency-Key': 'extract-once' });
    expect(again.body.id).toBe(first.body.id);
    expect(again.headers.get('idempotent-replay')).toBe('true');
    await finished(t, first.body.id);
  });
});

describe('GET /api/v2/extractions', () => {
  it('pages with cursor, filters by status (unknown is 400) and by document (another workspace gives an empty page)', async () => {
    const t = await tenant({ scopes: SCOPES });
    const a = await uploadedDocument(api.url, t.key, 'a.txt', 'text/plain', Buffer.from('Present: Ann.'));
    const b = await uploadedDocument(api.url, t.key, 'b.txt', 'text/plain', Buffer.from('Present: Bob.'));
    await scriptModel(t.model, [{ text: '{"names":["ann"]}' }, { text: '{"names":"bad"}' }, { text: '{"names":"bad"}' }]);
    const first = await finished(t, (await extract(t, { document: a, schema: NAMES, agent: t.agent })).body.id);
    const second = await finished(t, (await extract(t, { document: b, schema: NAMES, agent: t.agent })).body.id);
    const list = (query: string, key = t.key) => call(api.url, 'GET', `/api/v2/extractions${query}`, { key });

    const page1 = await list('?limit=1');
    expect(page1.body.data.map((x: { id: string }) => x.id)).toEqual([second.id]);
    const page2 = await list(`?limit=1&cursor=${page1.body.next_cursor}`);
    expect(page2.body.data.map((x: { id: string }) => x.id)).toEqual([first.id]);
    expect(page2.body.next_cursor).toBeNull();
    expect((await list('?status=failed')).body.data.map((x: { id: string }) => x.id)).toEqual([second.id]);
    expect((await list('?status=finished')).status).toBe(400);
    expect((await list(`?document=${a}`)).body.data.map((x: { id: string }) => x.id)).toEqual([first.id]);

    const stranger = await tenant({ scopes: SCOPES });
    expect((await list(`?document=${a}`, stranger.key)).body.data).toEqual([]);
    const theirs = await call(api.url, 'GET', `/api/v2/extractions/${first.id}`, { key: stranger.key });
    const missing = await call(api.url, 'GET', '/api/v2/extractions/ext_01gggggggggggggggggggggggg', { key: stranger.key });
    expect([theirs.status, theirs.body.error.code]).toEqual([404, 'extraction_not_found']);
    expect(theirs.text.replace(/req_[0-9a-z]+/, '')).toBe(missing.text.replace(/req_[0-9a-z]+/, ''));
  });
});
