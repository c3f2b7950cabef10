import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { dataConverter } from '../infra/payloadCodec';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { TEMPORAL_CLI } from '../workers/temporalDevServer';
import { workflowBundle, workflowSinks } from '../workers/workflowBundle';
import * as admin from '../admin/commands';
import { QueryTypes } from 'sequelize';
import { db } from '../db/sequelize';
import { call, closeAll, callsHeld, releaseHeld, scriptModel, startApi, tenant, until } from './support/stack';
import { allFrames, frames, openStream } from './support/sse';
import { everythingServer } from './support/mcpEverything';
import { ingest, uploadedDocument } from './support/documents';

/**
 * Replay tests: the recorded histories of representative runs (and of the reconciler) must replay against the workflow code
 * as it is now, so a change that would break runs in flight (non-determinism) fails here. After an
 * intended change of a workflow's commands, re-record with `npm run record-histories` (docs/operations.md,
 * "Changing a workflow"); to keep runs in flight working across such a change, use patched().
 */
const HISTORIES = path.join(__dirname, 'histories');

if (process.env.RECORD_HISTORIES) {
  describe('recording histories', () => {
    let api: { url: string; close(): Promise<void> };
    let tools: Server;
    let toolUrl = '';
    let client: Client;
    beforeAll(async () => {
      api = await startApi();
      tools = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"state":"shipped"}'));
      await new Promise<void>((resolve) => tools.listen(0, '127.0.0.1', resolve));
      toolUrl = `http://127.0.0.1:${(tools.address() as AddressInfo).port}/orders`;
      client = new Client({ connection: await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! }), dataConverter });
    });
    afterAll(async () => {
      tools.close();
      await client.connection.close();
      await api.close();
      await closeAll();
    });

    /** The history so far (a workflow still running replays up to where it is). */
    function save(name: string, workflowId: string): void {
      // The CLI's JSON is Temporal's own history format (the UI's download too), which historyFromJSON reads.
      const json = execFileSync(TEMPORAL_CLI, ['workflow', 'show', '--workflow-id', workflowId, '--address', process.env.TEMPORAL_ADDRESS!, '--output', 'json']);
      writeFileSync(path.join(HISTORIES, `${name}.json`), json);
    }
    async function record(name: string, runId: string): Promise<void> {
      await client.workflow.getHandle(runId).result().catch(() => undefined);
      save(name, runId);
    }
    const respond = (key: string, body: Record<string, unknown>) => call(api.url, 'POST', '/api/v2/responses', { key, body });
    const schema = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'], additionalProperties: false };
    const withTools = () => ({ tools: [{ type: 'http', name: 'lookup_order', description: 'Find an order', parameters: { type: 'object' }, url: toolUrl }, { type: 'handoff' }] });

    it('plain', async () => {
      const t = await tenant();
      await record('plain', (await respond(t.key, { agent: t.agent, input: 'hi' })).body.id);
    });
    it('streamed', async () => {
      const t = await tenant();
      await scriptModel(t.model, [{ chunks: ['a ', 'b'] }]);
      const fs = await allFrames(await openStream(api.url, '/api/v2/responses', t.key, { agent: t.agent, input: 'hi', stream: true }));
      await record('streamed', fs.find((f) => f.event === 'response.started')!.data.id);
    });
    it('tool rounds', async () => {
      const t = await tenant({ config: withTools() });
      await scriptModel(t.model, [{ toolCalls: [{ name: 'lookup_order', arguments: '{}' }] }, { toolCalls: [{ name: 'lookup_order', arguments: '{}' }] }, { text: 'shipped' }]);
      await record('tool-rounds', (await respond(t.key, { agent: t.agent, input: 'where?' })).body.id);
    });
    it('repair', async () => {
      const t = await tenant();
      await scriptModel(t.model, [{ text: '{"wrong":1}' }, { text: '{"answer":"yes"}' }]);
      await record('repair', (await respond(t.key, { agent: t.agent, input: 'hi', response_format: { type: 'json_schema', schema, strict: true } })).body.id);
    });
    it('cancel', async () => {
      const t = await tenant();
      await scriptModel(t.model, [{ chunks: ['slow ', 'answer'], chunkDelayMs: 3000 }]);
      for await (const frame of frames(await openStream(api.url, '/api/v2/responses', t.key, { agent: t.agent, input: 'hi', stream: true }))) {
        if (frame.event !== 'response.output_text.delta') continue;
        const id = frame.data.id;
        await call(api.url, 'POST', `/api/v2/runs/${id}/cancel`, { key: t.key });
        await record('cancel', id);
        break;
      }
    });
    it('timeout', async () => {
      const t = await tenant();
      await scriptModel(t.model, [{ text: 'too late', delayMs: 3000 }]);
      await record('timeout', (await respond(t.key, { agent: t.agent, input: 'hi', timeout_ms: 1000 })).body.id);
    });
    it('reconcile', async () => {
      // A pass over nothing old enough to touch: the reconciler's own workflow, page by page.
      const workflowId = `reconcile-record-${Date.now()}`;
      await client.workflow.execute('reconcileRuns', { taskQueue: 'background', workflowId, args: [3_600_000] });
      await record('reconcile', workflowId);
    });
    it('knowledge and ingestion', async () => {
      const t = await tenant({ scopes: ['responses:create', 'documents:create', 'knowledge:write', 'knowledge:read'], config: { knowledge: { collections: ['handbook'] } } });
      const document = await uploadedDocument(api.url, t.key, 'handbook.txt', 'text/plain', Buffer.from('Returns are accepted within 30 days.'));
      const ingestion = await ingest(api.url, t.key, document, 'handbook');
      await record('ingestion', ingestion.id);
      await record('knowledge', (await respond(t.key, { agent: t.agent, input: 'Are returns accepted?' })).body.id);
    });
    it('report', async () => {
      const t = await tenant({ scopes: ['reports:create', 'reports:read'] });
      const accepted = await call(api.url, 'POST', '/api/v2/reports', { key: t.key, body: { agent: t.agent, name: 'r', task: 'Summarise.' } });
      await record('report', accepted.body.id);
    });
    it('extraction', async () => {
      const t = await tenant({ scopes: ['documents:create', 'extractions:create', 'extractions:read'] });
      const document = await uploadedDocument(api.url, t.key, 'names.txt', 'text/plain', Buffer.from('Present: Ann.'));
      await scriptModel(t.model, [{ text: '{"names":["ann"]}' }]);
      const schema = { type: 'object', properties: { names: { type: 'array', items: { type: 'string' } } }, required: ['names'], additionalProperties: false };
      const accepted = await call(api.url, 'POST', '/api/v2/extractions', { key: t.key, body: { document, schema, agent: t.agent } });
      await record('extraction', accepted.body.id);
    });
    it('job', async () => {
      const t = await tenant({ scopes: ['jobs:create', 'jobs:read'] });
      const accepted = await call(api.url, 'POST', '/api/v2/jobs', { key: t.key, body: { type: 'runs.batch', params: { agent: t.agent }, items: [{ input: 'a' }, { input: 'b' }] } });
      await record('job', accepted.body.id);
    });
    it('webhook delivery and recovery', async () => {
      // A partner receiver that fails once, then accepts: an attempt, a timer, a second attempt.
      let answered = 0;
      const receiver = createServer((req, res) => req.resume().on('end', () => res.writeHead(answered++ === 0 ? 500 : 200).end()));
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
      try {
        const partner = await admin.createPartner({ name: 'p' });
        const key = (await admin.createPartnerKey({ partner: partner.id, scopes: 'webhooks:write,webhooks:read,agents:read' })).key;
        const ws = await admin.createWorkspace({ name: 'm', credits: 1_000_000, partner: partner.id, tenantRef: 'm-1' });
        const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
        const endpoint = (await call(api.url, 'POST', '/api/v1/partner/webhooks/endpoints/', { key, body: { url, enabled_events: ['agent.run.completed'] } })).body;
        const runKey = (await admin.createWorkspaceKey({ workspace: ws.id, scopes: 'agents:run' })).key;
        const agent = await admin.createAgent({ workspace: ws.id, name: 'a', config: { model: 'stub-replay-webhook' } });
        await call(api.url, 'POST', `/api/v2/agents/${agent.id}/runs`, { key: runKey, body: { input: 'hi' } });
        const list = async () => (await call(api.url, 'GET', '/api/v1/partner/webhooks/deliveries/', { key })).body.data;
        for (let i = 0; i < 200 && (await list())[0]?.status !== 'succeeded'; i++) await new Promise((r) => setTimeout(r, 50));
        await record('webhook-delivery', (await list())[0].id);
        const recovery = await call(api.url, 'POST', `/api/v1/partner/webhooks/endpoints/${endpoint.id}/recover/`, { key, body: { since: new Date(Date.now() - 60_000).toISOString() } });
        await record('webhook-recovery', recovery.body.id);
        // The dispatcher's run lasts a minute: its history so far, a few passes in.
        const dispatcher = (await client.schedule.getHandle('outbox-dispatcher').describe()).info.recentActions.at(-1)!.action.workflow.workflowId;
        save('outbox-dispatcher', dispatcher);
      } finally {
        receiver.close();
      }
    });
    it('queued turn', async () => {
      // A message posted while the conversation's first turn runs: it looks, waits, is woken by the first's end, then runs.
      const t = await tenant({ scopes: ['conversations:create', 'messages:create'] });
      const conv = (await call(api.url, 'POST', '/api/v2/conversations', { key: t.key, body: { agent: t.agent } })).body.id;
      await scriptModel(t.model, [{ text: 'first', hold: true }, { text: 'second' }]);
      const post = (input: string) => call(api.url, 'POST', `/api/v2/conversations/${conv}/messages`, { key: t.key, body: { input } });
      const first = post('one');
      await callsHeld(t.model, 1, 'the first turn');
      const second = post('two');
      const holds = () => db().query<{ run: string }>('SELECT run_public_id AS run FROM credit_reservations r JOIN conversations c ON c.id = r.conversation_id WHERE c.public_id = :conv ORDER BY turn', { replacements: { conv }, type: QueryTypes.SELECT });
      const queued = await until(async () => (await holds())[1]?.run, 'the second turn');
      await until(async () => ((await client.workflow.getHandle(queued).fetchHistory()).events ?? []).some((e) => e.timerStartedEventAttributes) || undefined, 'the second turn waiting');
      await releaseHeld(t.model);
      await first;
      await second;
      await record('queued-turn', queued);
    });
    it('scheduled run', async () => {
      // One firing of a schedule: planned, then its run as a child.
      const t = await tenant({ scopes: ['schedules:write', 'agents:run'] });
      const schedule = (await call(api.url, 'POST', '/api/v2/schedules', { key: t.key, body: { agent: t.agent, run: { input: 'digest' }, interval_seconds: 3600 } })).body.id;
      await client.schedule.getHandle(schedule).trigger();
      const firing = await until(async () => {
        for await (const w of client.workflow.list({ query: `TemporalScheduledById = '${schedule}'` })) return w.workflowId;
        return undefined;
      }, 'the firing');
      await record('scheduled-run', firing);
    });
    it('action', async () => {
      // A call that waits for approval: recorded, the update accepted, the call closed and made, then the answer.
      const t = await tenant({ config: { tools: [{ type: 'http', name: 'refund', parameters: { type: 'object' }, url: toolUrl, approval: 'required' }] } });
      await scriptModel(t.model, [{ toolCalls: [{ name: 'refund', arguments: '{}' }] }, { text: 'refunded' }]);
      const runId = (await respond(t.key, { agent: t.agent, input: 'refund' })).body.id;
      const [pending] = (await call(api.url, 'GET', `/api/v2/runs/${runId}`, { key: t.key })).body.required_action.calls;
      await call(api.url, 'POST', `/api/v2/runs/${runId}/actions`, { key: t.key, body: { call_id: 'call_0', decision: 'approve', arguments_sha256: pending.arguments_sha256 } });
      await record('action', runId);
    });
    it('mcp', async () => {
      // An agent with a remote MCP server: its tools listed when the run starts, one of them called.
      const everything = await everythingServer();
      try {
        const t = await tenant({ config: { tools: [{ type: 'mcp', server_label: 'everything', server_url: everything.url, allowed_tools: ['echo'] }] } });
        await scriptModel(t.model, [{ toolCalls: [{ name: 'everything__echo', arguments: '{"message":"hi"}' }] }, { text: 'echoed' }]);
        await record('mcp', (await respond(t.key, { agent: t.agent, input: 'echo hi' })).body.id);
      } finally {
        await everything.stop();
      }
    });
    it('handoff', async () => {
      const t = await tenant({ config: withTools() });
      await scriptModel(t.model, [{ toolCalls: [{ name: 'handoff', arguments: '{"reason":"a person"}' }] }]);
      await record('handoff', (await respond(t.key, { agent: t.agent, input: 'help' })).body.id);
    });
  });
} else {
  // Both bundles: workers run the traced one where spans are exported, the other elsewhere.
  it.each([false, true])('replays every recorded run history against the current workflow code (traced bundle: %s)', async (traced) => {
    const names = readdirSync(HISTORIES).filter((f) => f.endsWith('.json'));
    // Kept, not re-recorded: plain-settled-by-workflow, a run begun before its first call could settle it (a local activity after
    // the call), and cancel-without-cancel-record, a run cancelled before cancels were recorded.
    expect(names.sort()).toEqual(['action', 'cancel-without-cancel-record', 'cancel', 'extraction', 'handoff', 'ingestion', 'job', 'knowledge', 'mcp', 'outbox-dispatcher', 'plain-settled-by-workflow', 'plain', 'queued-turn', 'reconcile', 'repair', 'report', 'scheduled-run', 'streamed', 'timeout', 'tool-rounds', 'webhook-delivery', 'webhook-recovery'].map((n) => `${n}.json`));
    const histories = names.map((name) => ({ workflowId: name, history: historyFromJSON(JSON.parse(readFileSync(path.join(HISTORIES, name), 'utf8'))) }));
    const failures: string[] = [];
    for await (const result of Worker.runReplayHistories({ workflowBundle: await workflowBundle(require.resolve('../workflows'), traced), sinks: workflowSinks(traced), dataConverter }, histories)) {
      if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
    }
    expect(failures).toEqual([]);
  });
}
