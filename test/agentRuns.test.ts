import { QueryTypes } from 'sequelize';
import * as admin from '../admin/commands';
import { db } from '../db/sequelize';
import { type Answer, call, providerRequests, tenant, useApi } from './support/stack';

const api = useApi();

const withoutIds = (a: Answer) => a.text.replace(/req_[0-9a-z]+/g, 'req_X');
const run = (key: string, agent: string, body: Record<string, unknown>) => call(api.url, 'POST', `/api/v2/agents/${agent}/runs`, { key, body });

describe('POST /api/v2/agents/{agent_id}/runs', () => {
  it('puts the structured payload in the user message, fenced and labelled, never in the system message', async () => {
    const t = await tenant({ scopes: ['agents:run'], config: { instructions: 'You triage orders.' } });
    const payload = { order_id: 'ORD-SECRET-4411', items: [{ sku: 'A1', qty: 2 }] };
    const res = await run(t.key, t.agent, { input: payload });
    expect(res.status).toBe(200);
    expect(res.body.conversation).toMatch(/^conv_/);
    expect(res.body.status).toBe('completed');

    const [sent] = await providerRequests(t.model);
    const messages = sent.body.messages as { role: string; content: string }[];
    expect(messages[0]).toEqual({ role: 'system', content: 'You triage orders.' });
    expect(messages[0].content).not.toContain('ORD-SECRET-4411');
    expect(messages[1].role).toBe('user');
    expect(messages[1].content).toMatch(/^Task: .+\n\nInput \(JSON\):\n```json\n/);
    expect(messages[1].content).toContain('"order_id": "ORD-SECRET-4411"');
  });

  it('resolves the same external_ref to the same conversation every time', async () => {
    const t = await tenant({ scopes: ['agents:run'] });
    const first = await run(t.key, t.agent, { input: 'one', external_ref: 'crm-thread-17' });
    const second = await run(t.key, t.agent, { input: 'two', external_ref: 'crm-thread-17' });
    const other = await run(t.key, t.agent, { input: 'three', external_ref: 'crm-thread-18' });
    expect(first.body.conversation).toBe(second.body.conversation);
    expect(other.body.conversation).not.toBe(first.body.conversation);
  });

  it('takes the agent from the URL and refuses a different one in the body', async () => {
    const t = await tenant({ scopes: ['agents:run'] });
    const res = await run(t.key, t.agent, { input: 'hi', agent: 'agt_01bbbbbbbbbbbbbbbbbbbbbbbb' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
  });

  it('requires agents:run, not responses:create', async () => {
    const t = await tenant({ scopes: ['responses:create'] });
    const res = await run(t.key, t.agent, { input: 'hi' });
    expect(res.status).toBe(403);
    expect(res.body.error.message).toContain('agents:run');
  });
});

describe('agent availability and preview', () => {
  it('runs an active agent; refuses draft, paused and archived ones without preview with 409', async () => {
    for (const status of ['draft', 'paused', 'preview', 'archived']) {
      const t = await tenant({ scopes: ['agents:run'], agentStatus: status });
      const res = await run(t.key, t.agent, { input: 'hi' });
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('agent_not_available');
      expect(await providerRequests(t.model)).toHaveLength(0);
    }
  });

  it('answers preview without agent:preview as 404, byte for byte like a missing agent', async () => {
    const t = await tenant({ scopes: ['agents:run'], agentStatus: 'draft' });
    const preview = await run(t.key, t.agent, { input: 'hi', preview: true });
    const missing = await run(t.key, 'agt_01cccccccccccccccccccccccc', { input: 'hi', preview: true });
    expect(preview.status).toBe(404);
    expect(preview.body.error.code).toBe('agent_not_found');
    expect(withoutIds(preview)).toBe(withoutIds(missing));
  });

  it('runs the unpublished draft with preview and agent:preview, and says which version ran', async () => {
    const t = await tenant({ scopes: ['agents:run', 'agent:preview'], agentStatus: 'draft', config: { instructions: 'published v1' } });
    await admin.updateAgentDraft({ agent: t.agent, config: { model: t.model, instructions: 'draft v2' } });
    const res = await run(t.key, t.agent, { input: 'hi', options: { preview: true } });
    expect(res.status).toBe(200);
    expect(res.body.agent_version).toBe(2);
    expect((await providerRequests(t.model))[0].body.messages[0]).toEqual({ role: 'system', content: 'draft v2' });

    await admin.setAgentStatus({ agent: t.agent, status: 'active' });
    const published = await run(t.key, t.agent, { input: 'hi' });
    expect(published.body.agent_version).toBe(1);
    expect((await providerRequests(t.model))[1].body.messages[0]).toEqual({ role: 'system', content: 'published v1' });
  });

  it('refuses an archived agent even with preview', async () => {
    const t = await tenant({ scopes: ['agents:run', 'agent:preview'], agentStatus: 'archived' });
    const res = await run(t.key, t.agent, { input: 'hi', preview: true });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('agent_not_available');
  });
});

describe('request_context.resource_id', () => {
  async function document(workspace: string): Promise<string> {
    const id = `doc_${Date.now().toString(36)}${Math.random().toString(36).slice(2, 10)}`;
    await db().query(`INSERT INTO documents (public_id, workspace_id, name) SELECT :id, id, 'manual.pdf' FROM workspaces WHERE public_id = :ws`, { replacements: { id, ws: workspace } });
    return id;
  }

  it('narrows to a document of the workspace and records it on the run', async () => {
    const t = await tenant({ scopes: ['agents:run'] });
    const doc = await document(t.workspace);
    const res = await run(t.key, t.agent, { input: 'hi', request_context: { resource_id: doc } });
    expect(res.status).toBe(200);
    const [row] = await db().query<{ resource_id: string }>('SELECT resource_id FROM runs WHERE public_id = :id', { replacements: { id: res.body.id }, type: QueryTypes.SELECT });
    expect(row.resource_id).toBe(doc);
  });

  it("refuses another workspace's document or a missing one with 403 invalid_context, before any model call", async () => {
    const t = await tenant({ scopes: ['agents:run'] });
    const other = await tenant();
    for (const resource of [await document(other.workspace), 'doc_01dddddddddddddddddddddddd', 'col_nope']) {
      const res = await run(t.key, t.agent, { input: 'hi', request_context: { resource_id: resource } });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('invalid_context');
    }
    expect(await providerRequests(t.model)).toHaveLength(0);
  });
});
