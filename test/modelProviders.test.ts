import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { QueryTypes } from 'sequelize';
import { ValidationError } from 'yup';
import { dataConverter } from '../infra/payloadCodec';
import { resetConfig } from '../infra/config';
import { modelProvidersFrom } from '../infra/modelProviders';
import { db } from '../db/sequelize';
import * as admin from '../admin/commands';
import type { RunInput, RunOutcome } from '../domain/runs';
import { startRun } from '../workflowClients/agentRun.client';
import { redis } from '../infra/redis';
import { runTimeline } from '../api/dashboard/runTimeline';
import { startWorkers, type RunningWorkers } from '../workers/worker';
import { notTheApi } from './stack/contractCheck';
import { StubProvider } from './stack/stubProvider';
import { closeAll, providerRequests, runInputFor, tenant, until, type Tenant } from './support/stack';

/**
 * Model providers under pressure (docs/operations.md, "Model providers"), on the real stack: a worker
 * of this file's own, on a queue only it polls, with four providers declared in MODEL_PROVIDERS, each
 * a stub of its own with a fault switch, one limited to 2 calls at once. Provider names are this
 * file's alone (their health and slots are shared in Redis by every worker).
 */
const id = randomUUID().slice(0, 8);
const STORM = `storm-${id}`;
const DOWN = `down-${id}`;
const SPARE = `spare-${id}`;
const PACED = `paced-${id}`;
const QUEUE = `providers-${id}`;
const stubs = { storm: new StubProvider(), down: new StubProvider(), spare: new StubProvider(), paced: new StubProvider() };
const savedEnv = process.env.MODEL_PROVIDERS;
let worker: RunningWorkers;
let client: Client;
let t: Tenant;

beforeAll(async () => {
  // Each stands in for a provider, on the /v1 paths the API serves too: its answers are not the API's.
  for (const stub of Object.values(stubs)) notTheApi(await stub.start());
  process.env.MODEL_PROVIDERS = JSON.stringify([
    { name: STORM, base_url: `${stubs.storm.url}/v1`, api_key: 'k' },
    { name: DOWN, base_url: `${stubs.down.url}/v1`, api_key: 'k' },
    { name: SPARE, base_url: `${stubs.spare.url}/v1`, api_key_env: 'SPARE_KEY' },
    { name: PACED, base_url: `${stubs.paced.url}/v1`, api_key: 'k', max_concurrency: 2 },
  ]);
  process.env.SPARE_KEY = 'spare-key';
  resetConfig();
  worker = await startWorkers([QUEUE]);
  client = new Client({ connection: await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! }), dataConverter });
  t = await tenant();
});

afterAll(async () => {
  await worker?.shutdown();
  await client?.connection.close();
  for (const stub of Object.values(stubs)) await stub.stop();
  if (savedEnv === undefined) delete process.env.MODEL_PROVIDERS;
  else process.env.MODEL_PROVIDERS = savedEnv;
  resetConfig();
  await closeAll();
});

/** Starts a run of an agent with this model configuration on the file's own worker (of the tenant's workspace, with this input). */
async function start(config: { model: string; fallback_models?: string[] }, of = t, text = 'hi', timeoutMs = 60_000): Promise<string> {
  const input: RunInput = await runInputFor(of, { input: text, options: { timeoutMs } });
  input.agent = { ...input.agent, config };
  await startRun(client, input, { taskQueue: QUEUE });
  return input.runId;
}

const outcome = (runId: string) => client.workflow.getHandle(runId).result() as Promise<RunOutcome>;

/** Scripts the model's replies on a stub of this file's own. */
async function script(stub: StubProvider, model: string, replies: object[]): Promise<void> {
  await fetch(`${stub.url}/_stub/script`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, replies }) });
}

/** The routing steps of a run's timeline (api/dashboard/runTimeline.ts), as the dashboard shows them. */
async function routing(runId: string): Promise<{ kind: string; label: string }[]> {
  const steps = (await runTimeline(runId))!.steps;
  return steps.filter((s) => s.kind === 'wait' || s.kind === 'fallback').map((s) => ({ kind: s.kind, label: s.label }));
}

async function logged(runId: string): Promise<{ status: string; model: string; error_code: string | null }> {
  const [row] = await db().query<{ status: string; model: string; error_code: string | null }>(
    'SELECT l.status, l.model, l.error_code FROM run_logs l JOIN runs r ON r.id = l.run_id WHERE r.public_id = :id',
    { replacements: { id: runId }, type: QueryTypes.SELECT },
  );
  return row;
}

describe('a 429 storm with Retry-After', () => {
  it('is waited out by every run, the provider asked about once a Retry-After, not three times a run', async () => {
    const stub = stubs.storm;
    stub.setFault({ status: 429, headers: { 'retry-after': '1' } });
    const first = await start({ model: `${STORM}/stub-model` });
    // The first refusal starts the shared cooldown; the runs that start in it send nothing.
    await until(async () => stub.faulted >= 1 || undefined, 'the first refusal');
    const others: string[] = [];
    for (let i = 0; i < 11; i++) others.push(await start({ model: `${STORM}/stub-model` }));
    // Two more refusals: each a probe, one a second (Retry-After), while the storm lasts.
    await until(async () => stub.faulted >= 3 || undefined, 'two probes refused');
    stub.setFault(undefined);
    const runs = [first, ...others];
    const outcomes = await Promise.all(runs.map(outcome));
    expect(outcomes.map((o) => o.run.status)).toEqual(Array(12).fill('completed'));
    // Twelve runs, each retrying on its own, would have been refused 36 times in the storm and failed.
    // Here: the first refusal and one probe a Retry-After period (two while the test watched, a third
    // only if the test was slower than a period to turn the storm off).
    expect(stub.faulted).toBeLessThanOrEqual(4);
    // After the storm, one probe, then the rest: every run's call answered once.
    expect(stub.asked - stub.faulted).toBe(12);
    expect((await logged(first)).model).toBe(`${STORM}/stub-model`);
    // The dashboard's timeline shows the wait as a step of its own.
    expect(await routing(first)).toEqual([{ kind: 'wait', label: expect.stringMatching(new RegExp(`^waited \\d+\\.\\d s for provider ${STORM}: its cooldown \\(Retry-After\\)$`)) }]);
  });
});

describe('a provider down with a fallback', () => {
  it('sends its runs to the fallback, and is asked only until its circuit opens', async () => {
    stubs.down.setFault({ status: 503 });
    const runs: string[] = [];
    for (let i = 0; i < 6; i++) {
      const runId = await start({ model: `${DOWN}/stub-model`, fallback_models: [`${SPARE}/stub-model`] });
      expect((await outcome(runId)).run.status).toBe('completed');
      runs.push(runId);
    }
    // Three failures in a row open the circuit: the next runs go straight to the fallback (a probe may come at its end).
    expect(stubs.down.faulted).toBeGreaterThanOrEqual(3);
    expect(stubs.down.faulted).toBeLessThanOrEqual(4);
    expect(await logged(runs[5])).toEqual({ status: 'completed', model: `${SPARE}/stub-model`, error_code: null });
    // The dashboard's timeline shows the fallback as a step of its own, with why.
    expect(await routing(runs[0])).toEqual([{ kind: 'fallback', label: `answered by ${SPARE}/stub-model after ${DOWN}/stub-model failed: server` }]);
    stubs.down.setFault(undefined);
  });
});

describe('a provider limited to 2 calls at once, shared by two workspaces', () => {
  it('never has more than 2 calls at once, and lets the second workspace\'s run go after at most one more call of the first\'s', async () => {
    const stub = stubs.paced;
    const model = 'held';
    await script(stub, model, Array(6).fill({ hold: true }));
    const queued = () => redis().zcard(`aes:model-pacing:${PACED}:queue`);
    const release = () => fetch(`${stub.url}/_stub/release?model=${model}`, { method: 'POST' });
    const held = async () => ((await (await fetch(`${stub.url}/_stub/held?model=${model}`)).json()) as { held: number }).held;
    const other = await tenant();
    const runsOfA: string[] = [];
    for (let i = 0; i < 5; i++) runsOfA.push(await start({ model: `${PACED}/${model}` }, t, 'from workspace a'));
    // Two calls at the provider (held there until the test answers them), three waiting for a slot.
    await until(async () => ((await held()) === 2 && (await queued()) === 3) || undefined, "a's calls held and queued");
    const ofB = await start({ model: `${PACED}/${model}` }, other, 'from workspace b');
    await until(async () => (await queued()) === 4 || undefined, "b's call queued");
    // Each answer frees a slot, which goes to the next call in turn: two calls at the provider again.
    for (const asked of [4, 6]) {
      await release();
      await until(async () => (stub.asked === asked && (await held()) === 2) || undefined, `${asked} calls asked`);
    }
    await release();
    const outcomes = await Promise.all([...runsOfA, ofB].map(outcome));
    expect(outcomes.map((o) => o.run.status)).toEqual(Array(6).fill('completed'));
    expect(stub.mostAtOnce).toBe(2);
    // By arrival, b's call would have been the sixth; by turns, it follows at most a's one call of the turn it joined.
    const order = (await providerRequests(model, stub.url)).map((r) => (JSON.stringify(r.body.messages).includes('from workspace b') ? 'b' : 'a'));
    expect(order.indexOf('b')).toBeGreaterThanOrEqual(2);
    expect(order.indexOf('b')).toBeLessThanOrEqual(3);
    expect(await routing(ofB)).toEqual([{ kind: 'wait', label: expect.stringMatching(new RegExp(`^waited \\d+\\.\\d s for provider ${PACED}: a slot \\(max_concurrency, rpm\\)$`)) }]);
  });
});

describe('a provider whose slots stay full past a run\'s deadline', () => {
  it('fails the waiting run provider_unavailable, having sent nothing and charged nothing', async () => {
    const stub = stubs.paced;
    const model = 'blocking';
    await script(stub, model, Array(2).fill({ hold: true }));
    const held = async () => ((await (await fetch(`${stub.url}/_stub/held?model=${model}`)).json()) as { held: number }).held;
    const blocking = [await start({ model: `${PACED}/${model}` }), await start({ model: `${PACED}/${model}` })];
    await until(async () => (await held()) === 2 || undefined, 'both slots taken');
    const asked = stub.asked;
    // Its slot never frees before its deadline: the held calls are answered only after it has failed.
    const late = await start({ model: `${PACED}/${model}` }, t, 'hi', 3000);
    const result = await outcome(late);
    expect({ status: result.run.status, code: result.error?.code, tokens: result.run.usage.total_tokens }).toEqual({ status: 'failed', code: 'provider_unavailable', tokens: 0 });
    expect(stub.asked).toBe(asked);
    await fetch(`${stub.url}/_stub/release?model=${model}`, { method: 'POST' });
    expect((await Promise.all(blocking.map(outcome))).map((o) => o.run.status)).toEqual(['completed', 'completed']);
  });
});

describe('a request the provider refuses (400)', () => {
  it('fails the run provider_unavailable without falling back', async () => {
    await fetch(`${stubs.spare.url}/_stub/script`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'bad-request', replies: [{ status: 400 }] }) });
    const asked = stubs.storm.asked;
    const runId = await start({ model: `${SPARE}/bad-request`, fallback_models: [`${STORM}/stub-model`] });
    const result = await outcome(runId);
    expect({ status: result.run.status, code: result.error?.code }).toEqual({ status: 'failed', code: 'provider_unavailable' });
    expect(stubs.storm.asked).toBe(asked);
  });
});

describe('the operator contract', () => {
  it('refuses an agent naming a provider this service does not have, at create, update and publish', async () => {
    const ws = await admin.createWorkspace({ name: 'providers', credits: 0 });
    const refused = (p: Promise<unknown>, provider: string) => expect(p).rejects.toThrow(new RegExp(`names provider "${provider}"`));
    await refused(admin.createAgent({ workspace: ws.id, name: 'a', config: { model: 'nosuch/x' } }), 'nosuch');
    await expect(admin.createAgent({ workspace: ws.id, name: 'a', config: { model: 'nosuch/x' } })).rejects.toBeInstanceOf(ValidationError);
    const agent = await admin.createAgent({ workspace: ws.id, name: 'a', config: { model: `${SPARE}/meta-llama/Llama-3`, fallback_models: [`${STORM}/m`, 'bare-model'] } });
    await refused(admin.updateAgentDraft({ agent: agent.id, config: { model: 'x', fallback_models: [`${STORM}/m`, 'gone/m'] } }), 'gone');
    // A provider removed after the draft was saved: its publish is refused.
    process.env.MODEL_PROVIDERS = JSON.stringify([...JSON.parse(process.env.MODEL_PROVIDERS!), { name: 'leaving', base_url: 'http://127.0.0.1:9/v1', api_key: 'k' }]);
    resetConfig();
    await admin.updateAgentDraft({ agent: agent.id, config: { model: 'leaving/m' } });
    process.env.MODEL_PROVIDERS = JSON.stringify(JSON.parse(process.env.MODEL_PROVIDERS!).slice(0, 4));
    resetConfig();
    await refused(admin.publishAgent({ agent: agent.id }), 'leaving');
  });

  it('reads MODEL_PROVIDERS strictly, and keeps MODEL_BASE_URL as the one provider "default" without it', () => {
    expect(modelProvidersFrom({ MODEL_BASE_URL: 'http://m/v1', MODEL_API_KEY: 'k' })).toEqual({ providers: [{ name: 'default', baseUrl: 'http://m/v1', apiKey: 'k' }], declared: false });
    const refusal = (raw: string, env: Record<string, string> = {}) => () => modelProvidersFrom({ MODEL_PROVIDERS: raw, ...env });
    expect(refusal('{')).toThrow(/MODEL_PROVIDERS: not valid JSON/);
    expect(refusal('[]')).toThrow(/non-empty JSON array/);
    expect(refusal('[{"name":"a/b","base_url":"http://x","api_key":"k"}]')).toThrow(/name must be/);
    expect(refusal('[{"name":"a","base_url":"ftp://x","api_key":"k"}]')).toThrow(/base_url must be an http\(s\) URL/);
    expect(refusal('[{"name":"a","base_url":"http://x"}]')).toThrow(/exactly one of api_key or api_key_env/);
    expect(refusal('[{"name":"a","base_url":"http://x","api_key_env":"NOPE"}]')).toThrow(/NOPE.*not set/);
    expect(refusal('[{"name":"a","base_url":"http://x","api_key":"k","rpm":0}]')).toThrow(/rpm must be a positive integer/);
    expect(refusal('[{"name":"a","base_url":"http://x","api_key":"k"},{"name":"a","base_url":"http://y","api_key":"k"}]')).toThrow(/two providers are named "a"/);
    expect(refusal('[{"name":"a","base_url":"http://x","api_key":"k","region":"eu"}]')).toThrow(/unknown keys region/);
  });
});
