import { Client, Connection } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { dataConverter } from '../infra/payloadCodec';
import { closeAll, call, scriptModel, tenant, useApi } from './support/stack';

/**
 * What an operator reads in the Temporal UI's lists and pages: every workflow says what it is (its
 * static summary and details), and every activity of a run which step it is (its summary), readable
 * without the codec (metadata only, so not sealed), while the run's input stays sealed.
 */
const api = useApi();
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

/** A payload read as the UI reads it without the codec. */
const plain = (payload: Payload | null | undefined) => (payload ? defaultPayloadConverter.fromPayload<unknown>(payload) : undefined);

describe('workflows and activities say what they are', () => {
  it('a run: its agent, version, kind and workspace in the summary, its ids in the details, and each activity its step', async () => {
    const t = await tenant({ config: { tools: [{ type: 'http', name: 'lookup_order', description: 'Find an order', parameters: { type: 'object', properties: {} }, url: 'http://127.0.0.1:9/never' }] } });
    await scriptModel(t.model, [{ toolCalls: [{ name: 'missing_tool', arguments: '{}' }] }, { text: 'done' }]);
    const res = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'hi' } });
    expect(res.status).toBe(200);
    await client.workflow.getHandle(res.body.id).result();
    // Read as the UI reads it without the codec.
    const { executionConfig } = await connection.workflowService.describeWorkflowExecution({ namespace: 'default', execution: { workflowId: res.body.id } });
    expect(plain(executionConfig?.userMetadata?.summary)).toBe(`run · agent "agent" v1 · response · ${t.workspace}`);
    expect(plain(executionConfig?.userMetadata?.details)).toBe(`agent: ${t.agent}\nrequest_id: ${res.body.request_id}\ntrace_id: ${res.body.trace_id}`);
    const history = await client.workflow.getHandle(res.body.id).fetchHistory();
    const summaries = (history.events ?? []).filter((e) => e.activityTaskScheduledEventAttributes).map((e) => plain(e.userMetadata?.summary));
    expect(summaries).toEqual(['model call 1, starting the run', 'model call 2 (after tools)']);
    // What the run was asked stays sealed.
    const started = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    expect(new TextDecoder().decode(started?.metadata?.encoding ?? undefined)).toBe('binary/encrypted');
    // The settlement, a local activity, names its step too (its marker's metadata).
    const markers = (history.events ?? []).filter((e) => e.markerRecordedEventAttributes).map((e) => plain(e.userMetadata?.summary));
    expect(markers).toContain('settle: status, ledger, log and events');
  });

  it('background work: a report and its bookkeeping steps', async () => {
    const t = await tenant({ scopes: ['reports:create', 'reports:read'] });
    const accepted = await call(api.url, 'POST', '/api/v2/reports', { key: t.key, body: { agent: t.agent, name: 'r', task: 'Summarise.' } });
    expect(accepted.status).toBe(202);
    const handle = client.workflow.getHandle(accepted.body.id);
    await handle.result();
    const { executionConfig } = await connection.workflowService.describeWorkflowExecution({ namespace: 'default', execution: { workflowId: accepted.body.id } });
    expect(plain(executionConfig?.userMetadata?.summary)).toBe(`report (text) · ${t.workspace}`);
    const history = await handle.fetchHistory();
    const summaries = (history.events ?? []).filter((e) => e.activityTaskScheduledEventAttributes).map((e) => plain(e.userMetadata?.summary));
    expect(summaries).toEqual(['record the report as running', 'settle the report with the run\'s answer']);
  });
});
