import { runFilterState } from '../api/dashboard/runFilters';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { QueryTypes } from 'sequelize';
import * as admin from '../admin/commands';
import { db } from '../db/sequelize';
import { ROLE_SCOPES } from '../domain/members';
import { ingest, uploadedDocument } from './support/documents';
import { call, scriptModel, tenant, until, useApi, type Tenant } from './support/stack';

// Read by the API's config when it first loads: the run page links owners to a run's workflow there.
process.env.TEMPORAL_UI_URL = 'http://temporal-ui.test:8233';
const api = useApi();

/** Screenshots land here (git-ignored), for a person to look at after the run. */
const SHOTS = path.join(__dirname, '..', 'test-output', 'screenshots');
const PASSWORD = 'correct horse battery staple';

// The machine's closed network refuses Chromium's background connections; these flags stop it trying.
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

let browser: Browser;
beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: CHROMIUM_ARGS });
});
afterAll(async () => {
  await browser?.close();
});

/** A member of the tenant's workspace and the path of their one-time set-up link. */
async function member(t: Tenant, role = 'owner') {
  const created = await admin.createMember({ workspace: t.workspace, email: `${role}-${t.model}@example.test`, role });
  const link = new URL(created.setup_url);
  return { ...created, setupPath: link.pathname + link.search };
}

async function signIn(page: Page, email: string): Promise<void> {
  await page.goto(`${api.url}/dashboard/sign-in`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(/\/dashboard\/usage$/);
}

async function setUp(page: Page, setupPath: string): Promise<void> {
  await page.goto(api.url + setupPath);
  await page.getByLabel(/New password/).fill(PASSWORD);
  await page.getByLabel('The same password again').fill(PASSWORD);
  await page.getByRole('button', { name: 'Set password and sign in' }).click();
  await page.waitForURL(/\/dashboard\/usage$/);
}

const respond = (key: string, t: Tenant, channel: string) => call(api.url, 'POST', '/api/v2/responses', { key, body: { agent: t.agent, input: 'hello', channel } });

describe('dashboard in a real browser', () => {
  it('sets a password from the link, mints a key that works, revokes it, and charts usage', async () => {
    const t = await tenant({ scopes: ['responses:create'] });
    // Usage on two channels, so the chart has stacked bars to draw.
    for (const channel of ['web', 'whatsapp', 'web']) expect((await respond(t.key, t, channel)).status).toBe(200);
    const m = await member(t);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();

    await setUp(page, m.setupPath);
    // The chart: one bar segment per (day, channel), a legend per channel, and the balance.
    await expect(page.locator('svg.chart rect').count()).resolves.toBe(2);
    await expect(page.locator('figcaption').innerText()).resolves.toMatch(/web: \d+[\s\S]*whatsapp: \d+/);
    expect(Number((await page.locator('[data-balance]').innerText()).replace(/,/g, ''))).toBeLessThan(1_000_000);
    await page.screenshot({ path: path.join(SHOTS, 'usage.png'), fullPage: true });

    // The link works once.
    const again = await (await context.newPage()).goto(api.url + m.setupPath);
    expect(again?.status()).toBe(404);

    // Mint: pick scopes, see the key once.
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByText('Mint a key').click();
    await page.getByLabel('Name').fill('browser-minted');
    await page.getByLabel('responses:create').check();
    await page.getByLabel('logs:read').check();
    await page.getByRole('button', { name: 'Mint key' }).click();
    const key = await page.locator('#minted-key').innerText();
    expect(key).toMatch(/^tgcc_[A-Za-z0-9_-]{43}$/);
    await page.screenshot({ path: path.join(SHOTS, 'keys-minted.png'), fullPage: true });
    await page.goto(`${api.url}/dashboard/keys`);
    expect(await page.content()).not.toContain(key);

    // The key works on the API, with exactly the scopes picked; last use shows in the list.
    expect((await respond(key, t, 'api')).status).toBe(200);
    expect((await call(api.url, 'GET', '/api/v2/logs', { key })).status).toBe(200);
    expect((await call(api.url, 'GET', '/api/v2/jobs', { key })).status).toBe(403);
    const row = page.locator('tr', { hasText: 'browser-minted' });
    await until(async () => {
      await page.reload();
      return (await row.innerText()).includes('never') ? undefined : true;
    }, 'the key to show its last use');

    // Revoke: the key stops working at once on this instance (others' caches keep it up to 5 s).
    await row.getByRole('button', { name: /Revoke/ }).click();
    await expect(row.innerText()).resolves.toMatch(/revoked/);
    expect((await respond(key, t, 'api')).status).toBe(401);

    // Logs and runs pages list the four runs (metadata only).
    await page.getByRole('link', { name: 'Logs' }).click();
    await expect(page.locator('tbody tr').count()).resolves.toBe(4);
    await page.getByRole('link', { name: 'Runs' }).click();
    await expect(page.locator('tbody tr').count()).resolves.toBe(4);
    expect(await page.content()).not.toContain('hello');
    await context.close();
  });

  it('the session is a credential on the API: role-derived scopes, and its CSRF token on every write', async () => {
    const t = await tenant();
    const m = await member(t, 'viewer');
    const context = await browser.newContext();
    const page = await context.newPage();
    await setUp(page, m.setupPath);

    // A viewer reads but writes nothing; a write needs the session's CSRF token first of all.
    expect((await page.request.get(`${api.url}/api/v2/logs`)).status()).toBe(200);
    const csrf = await page.locator('input[name="_csrf"]').first().inputValue();
    const withoutToken = await page.request.post(`${api.url}/api/v2/responses`, { data: { agent: t.agent, input: 'hi' } });
    expect(withoutToken.status()).toBe(403);
    expect((await withoutToken.json()).error.message).toMatch(/CSRF/);
    const withToken = await page.request.post(`${api.url}/api/v2/responses`, { data: { agent: t.agent, input: 'hi' }, headers: { 'X-CSRF-Token': csrf } });
    expect(withToken.status()).toBe(403);
    expect((await withToken.json()).error.message).toMatch(/responses:create/);
    expect(ROLE_SCOPES.viewer).not.toContain('responses:create');

    // A viewer sees the keys but has no mint form, and a forged mint is refused.
    await page.goto(`${api.url}/dashboard/keys`);
    await expect(page.getByText('Mint a key').count()).resolves.toBe(0);
    const forged = await page.request.post(`${api.url}/dashboard/keys`, { form: { _csrf: csrf, scopes: 'logs:read' } });
    expect(forged.status()).toBe(403);

    // Signing out ends the session on the API too.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/sign-in/);
    expect((await page.request.get(`${api.url}/api/v2/logs`)).status()).toBe(401);
    await context.close();
  });

  it('an owner session runs agents on the API, and agents are created, edited, published and activated', async () => {
    const t = await tenant();
    const m = await member(t);
    const context = await browser.newContext();
    const page = await context.newPage();
    await setUp(page, m.setupPath);
    await page.goto(`${api.url}/dashboard/agents`);
    const csrf = await page.locator('input[name="_csrf"]').first().inputValue();
    const ran = await page.request.post(`${api.url}/api/v2/responses`, { data: { agent: t.agent, input: 'hi' }, headers: { 'X-CSRF-Token': csrf } });
    expect(ran.status()).toBe(200);
    expect((await ran.json()).status).toBe('completed');

    await page.getByLabel('New agent').fill('Support');
    await page.getByRole('button', { name: 'Create' }).click();
    await page.waitForURL(/\/dashboard\/agents\/agt_/);
    const agentId = page.url().split('/').pop()!;

    // A config the schema refuses is shown on the form, and nothing changes.
    await page.getByLabel(/JSON/).fill('{"temperature": 9}');
    await page.getByRole('button', { name: 'Save draft' }).click();
    await expect(page.getByRole('alert').innerText()).resolves.toMatch(/temperature/);
    await page.getByLabel(/JSON/).fill(`{"model": "${t.model}", "instructions": "Be brief."}`);
    await page.getByRole('button', { name: 'Save draft' }).click();
    await expect(page.getByRole('status').innerText()).resolves.toBe('Draft saved.');
    await page.getByRole('button', { name: 'Publish the draft as version 2' }).click();
    await page.getByLabel('Status').selectOption('active');
    await page.getByRole('button', { name: 'Set status' }).click();
    await expect(page.locator('#agent-summary').innerText()).resolves.toMatch(/status active · published version 2/);
    await expect(page.locator('tbody tr').count()).resolves.toBe(2);
    await page.screenshot({ path: path.join(SHOTS, 'agent.png'), fullPage: true });

    // The published agent runs through the API with the member's session.
    const run = await page.request.post(`${api.url}/api/v2/responses`, { data: { agent: agentId, input: 'hi' }, headers: { 'X-CSRF-Token': csrf } });
    expect(run.status()).toBe(200);
    await context.close();
  });
});

describe("a run's page", () => {
  it('shows its steps with their times, tokens and credits, never its text, and owners the Temporal UI', async () => {
    const tool = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"SECRET-TOOL-ANSWER"}'));
    await new Promise<void>((resolve) => tool.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(tool.address() as AddressInfo).port}/orders`;
    const t = await tenant({ config: { tools: [{ type: 'http', name: 'lookup_order', description: 'Find an order', parameters: { type: 'object', properties: {} }, url }] } });
    await scriptModel(t.model, [{ toolCalls: [{ name: 'lookup_order', arguments: '{"order":"SECRET-ARGUMENTS"}' }] }, { text: 'SECRET-ANSWER' }]);
    const ran = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'SECRET-INPUT' } });
    tool.close();
    expect(ran.body.status).toBe('completed');
    const runId: string = ran.body.id;

    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await setUp(page, (await member(t)).setupPath);
    await page.goto(`${api.url}/dashboard/runs`);
    await page.getByRole('link', { name: runId }).click();
    await page.waitForURL(new RegExp(`/dashboard/runs/${runId}$`));
    await expect(page.locator('#run-summary').innerText()).resolves.toMatch(new RegExp(`${runId} · completed · response · agent agent \\(${t.agent}\\) v1`));
    const steps = await page.locator('#run-timeline tbody tr').evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((td) => td.textContent!.trim())));
    // Time, step, status, latency, attempts, tokens, detail.
    expect(steps.map((cells) => cells[1])).toEqual(['queued', 'started', 'model call 1, starting the run', 'tool lookup_order', 'model call 2 (after tools)', 'settled']);
    const [, , first, toolStep, second, settled] = steps;
    expect(first.slice(2, 6)).toEqual(['completed', expect.stringMatching(/^\d+ ms$/), '1', '10 / 5']);
    expect(toolStep[2]).toBe('completed');
    expect(toolStep[3]).toMatch(/^\d+ ms$/);
    expect(second[5]).toBe('10 / 5');
    expect(settled[2]).toBe('completed');
    const figures = await page.locator('#run-figures').innerText();
    expect(figures).toMatch(/Tokens in \/ out\s+20 \/ 10/);
    expect(figures).toMatch(/Credits held\s+\d+/);
    expect(figures).toMatch(/Credits charged\s+30/);
    expect(await page.getByRole('link', { name: /Temporal UI/ }).getAttribute('href')).toBe(`http://temporal-ui.test:8233/namespaces/default/workflows/${runId}`);
    // Metadata only: nothing the client, the model or the tool said.
    expect(await page.content()).not.toMatch(/SECRET-/);
    await page.screenshot({ path: path.join(SHOTS, 'run.png'), fullPage: true });

    // A viewer reads the page, without the operator's link.
    const viewer = await (await browser.newContext()).newPage();
    await setUp(viewer, (await member(t, 'viewer')).setupPath);
    await viewer.goto(`${api.url}/dashboard/runs/${runId}`);
    await expect(viewer.locator('#run-timeline').isVisible()).resolves.toBe(true);
    await expect(viewer.getByRole('link', { name: /Temporal UI/ }).count()).resolves.toBe(0);
    // Another workspace's run is not found.
    const other = await tenant();
    const theirs = await call(api.url, 'POST', '/api/v2/responses', { key: other.key, body: { agent: other.agent, input: 'hi' } });
    expect((await viewer.goto(`${api.url}/dashboard/runs/${theirs.body.id}`))!.status()).toBe(404);
    await context.close();
  });
});

describe("a run's page, retrieval and repair", () => {
  it('shows the retrieval with its passages\' chunk ids and the repair call, never the passages or the answer', async () => {
    const t = await tenant({ scopes: ['responses:create', 'documents:create', 'knowledge:write', 'knowledge:read'], config: { knowledge: { collections: ['handbook'] } } });
    const document = await uploadedDocument(api.url, t.key, 'handbook.txt', 'text/plain', Buffer.from('SECRET-PASSAGE: returns are accepted within 30 days.'));
    await ingest(api.url, t.key, document, 'handbook');
    // The first answer misses the schema, the repair fits it.
    await scriptModel(t.model, [{ text: '{"wrong":1}' }, { text: '{"answer":"SECRET-ANSWER"}' }]);
    const format = { type: 'json_schema', name: 'reply', schema: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'], additionalProperties: false } };
    const ran = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'Are returns accepted?', response_format: format } });
    expect(ran.body.status).toBe('completed');
    const [chunk] = (await db().query<{ public_id: string }>('SELECT c.public_id FROM knowledge_chunks c JOIN documents d ON d.id = c.document_id WHERE d.public_id = :document', { replacements: { document }, type: QueryTypes.SELECT }));

    const context = await browser.newContext();
    const page = await context.newPage();
    await setUp(page, (await member(t, 'viewer')).setupPath);
    await page.goto(`${api.url}/dashboard/runs/${ran.body.id}`);
    const steps = await page.locator('#run-timeline tbody tr').evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((td) => td.textContent!.trim())));
    expect(steps.map((cells) => cells[1])).toEqual(['queued', 'started', 'retrieval from 1 collection', 'model call 1, starting the run', 'model call 2 (repair)', 'settled']);
    expect(steps[2][6]).toBe(`passages ${chunk.public_id}`);
    expect(steps[4][2]).toBe('completed');
    expect(await page.content()).not.toMatch(/SECRET-/);
    await context.close();
  });
});

describe('runs that need attention', () => {
  it('the Runs page filters to failed or blocked runs, runs that waited in the queue, and runs the reconciler settled, and pages keep the filter', async () => {
    const t = await tenant();
    await scriptModel(t.model, [{ text: 'fine' }, { status: 400 }, { text: 'fine' }, { text: 'fine' }, { text: 'fine' }]);
    const ask = () => call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'hi' } });
    const [ok, failed, reconciled, slow, slower] = [await ask(), await ask(), await ask(), await ask(), await ask()];
    expect(failed.status).toBe(502);
    const set = (runId: string, assignments: string) => db().query(`UPDATE runs SET ${assignments} WHERE public_id = :id`, { replacements: { id: runId }, type: QueryTypes.UPDATE });
    await set(reconciled.body.id, 'reconciled_at = now()');
    await set(slow.body.id, "created_at = started_at - interval '2 minutes'");
    await set(slower.body.id, "created_at = started_at - interval '10 minutes'");

    const context = await browser.newContext();
    const page = await context.newPage();
    await setUp(page, (await member(t, 'viewer')).setupPath);
    await page.goto(`${api.url}/dashboard/runs`);
    const listed = () => page.locator('tbody tr td:nth-child(2)').allInnerTexts();
    expect(await listed()).toEqual([slower, slow, reconciled, failed, ok].map((r) => r.body.id));
    // Each filter is a GET of the page with the filter in its query: wait for that page, not any.
    const show = async (view: string, label: string, waitedS?: string) => {
      await page.getByLabel('Show').selectOption({ label });
      if (waitedS) await page.getByLabel(/longer than/).fill(waitedS);
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.waitForURL((url) => url.searchParams.get('view') === view && (!waitedS || url.searchParams.get('waited_s') === waitedS));
      return listed();
    };
    expect(await show('failed', 'Failed or blocked')).toEqual([failed.body.id]);
    expect(await show('reconciled', 'Settled by the reconciler')).toEqual([reconciled.body.id]);
    expect(await show('queued', 'Waited in the queue', '60')).toEqual([slower.body.id, slow.body.id]);
    expect(await show('queued', 'Waited in the queue', '300')).toEqual([slower.body.id]);
    await page.screenshot({ path: path.join(SHOTS, 'runs-attention.png'), fullPage: true });
    // Paging keeps the filter.
    await page.goto(`${api.url}/dashboard/runs?view=queued&waited_s=60&limit=25`);
    await page.getByLabel('Per page').selectOption('50');
    await page.getByRole('button', { name: 'Show', exact: true }).click();
    await page.waitForURL(/limit=50/);
    expect(new URL(page.url()).searchParams.get('view')).toBe('queued');
    expect(await listed()).toEqual([slower.body.id, slow.body.id]);
    await context.close();
  });
});

describe('dashboard without a browser', () => {
  it('refuses a wrong password, a form without its token, and another workspace’s key', async () => {
    const t = await tenant();
    const other = await tenant();
    const m = await member(t);
    const context = await browser.newContext();
    const page = await context.newPage();
    await setUp(page, m.setupPath);
    await page.getByRole('button', { name: 'Sign out' }).click();

    await page.getByLabel('Email').fill(m.email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('alert').innerText()).resolves.toMatch(/do not match/);
    await signIn(page, m.email);

    const csrf = await page.locator('input[name="_csrf"]').first().inputValue();
    const otherKey = (await admin.createWorkspaceKey({ workspace: other.workspace, scopes: 'logs:read' })).id;
    expect((await page.request.post(`${api.url}/dashboard/keys/${otherKey}/revoke`, { form: { _csrf: csrf } })).status()).toBe(404);
    expect((await page.request.post(`${api.url}/dashboard/keys/${otherKey}/revoke`, { form: {} })).status()).toBe(403);
    expect((await call(api.url, 'GET', '/api/v2/logs', { key: (await admin.createWorkspaceKey({ workspace: other.workspace, scopes: 'logs:read' })).key })).status).toBe(200);

    // Pages need a session: without one, sign in first and come back.
    const anonymous = await fetch(`${api.url}/dashboard/keys`, { redirect: 'manual' });
    expect(anonymous.status).toBe(302);
    expect(anonymous.headers.get('location')).toBe('/dashboard/sign-in?next=%2Fdashboard%2Fkeys');
    await context.close();
  });
});

describe('the Runs page’s filter', () => {
  it('takes only its own views: a name from the object prototype shows every run', () => {
    for (const view of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) expect(runFilterState({ view })).toMatchObject({ view: 'all', filters: {}, params: [] });
    expect(runFilterState({ view: 'failed' }).filters).toEqual({ statuses: ['failed', 'blocked'] });
  });
});
