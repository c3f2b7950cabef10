import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { DEFAULT_INSTRUCTIONS } from '../domain/agents';
import { JSON_OBJECT_GRAMMAR } from '../workers/modelServer';
import { StubProvider } from './stack/stubProvider';
import { JSON_PROMPTS, repeatedSentence } from './support/answers';
import { childApi, childWorker, type Child } from './support/childProcesses';
import { ownDatabase, type OwnDatabase } from './support/ownDatabase';
import { call, providerRequests } from './support/stack';

/**
 * The service deployed on the embedded model as `npm start` deploys it (a worker and an API whose
 * provider is llama.cpp's server serving SmolLM2-135M, in a Temporal namespace and a database of
 * their own, so the stack's reconciler never sees their runs), with what it sends recorded by a stub
 * that relays everything to that server. Assertions are on counts and structure, never on the model's words.
 */
jest.setTimeout(15 * 60_000);
const NAMESPACE = process.env.TEST_SPARE_NAMESPACES!.split(',')[5];
/** The embedded server's slot (workers/modelServer.py, MODEL_SERVER_CONTEXT): the window the service must find for itself. */
const SLOT_TOKENS = 2048;
const TIMEOUT_MS = 120_000;

const relay = new StubProvider(process.env.TEST_MODEL_SERVER_URL!, process.env.TEST_MODEL_SERVER_KEY!, true);
let relayUrl: string;
let api: Child & { url: string };
let database: OwnDatabase;
const children: Child[] = [];
const ROOT = path.join(__dirname, '..');

/** The admin CLI on this deployment's database, as an operator runs it. */
async function admin(...args: string[]): Promise<{ id: string; key: string }> {
  const { stdout } = await promisify(execFile)(process.execPath, [path.join(ROOT, 'dist/admin/cli.js'), ...args], { env: { ...process.env, DATABASE_URL: database.url } });
  return JSON.parse(stdout);
}

/** A workspace with a key and an active agent of this configuration; `model` names the agent's requests at the relay. */
async function tenant(options: { scopes: string[]; config?: Record<string, unknown>; credits?: number }) {
  const model = `embedded-${randomUUID()}`;
  const configFile = path.join(mkdtempSync(path.join(tmpdir(), 'agent-')), 'config.json');
  writeFileSync(configFile, JSON.stringify({ model, ...options.config }));
  const workspace = await admin('workspace', 'create', '--name', 'test', '--credits', String(options.credits ?? 1_000_000));
  const { key } = await admin('key', 'create', '--workspace', workspace.id, '--scopes', options.scopes.join(','));
  const agent = await admin('agent', 'create', '--workspace', workspace.id, '--name', 'agent', '--status', 'active', '--config', configFile);
  return { key, agent: agent.id, model };
}

beforeAll(async () => {
  database = await ownDatabase('aes_embedded');
  relayUrl = await relay.start();
  const env = { TEMPORAL_NAMESPACE: NAMESPACE, DATABASE_URL: database.url, MODEL_BASE_URL: `${relayUrl}/v1`, MODEL_API_KEY: 'relayed', MODEL_JSON_OBJECT_GRAMMAR: JSON_OBJECT_GRAMMAR };
  const [worker, started] = await Promise.all([childWorker('agent-runs', env), childApi(env)]);
  api = started;
  children.push(worker, api);
});

afterAll(async () => {
  await Promise.all(children.map((c) => c.stop()));
  await relay.stop();
  await database?.drop();
});

/** An answer is brief and not caught in a loop: the measure of a first answer. */
function expectBrief(run: { status: string; output: { type: string; text: string }[]; usage: { output_tokens: number } }): void {
  expect(run.status).toBe('completed');
  expect(run.output).toEqual([{ type: 'text', text: expect.stringMatching(/\S/) }]);
  const { text } = run.output[0];
  const verdict = { long: run.usage.output_tokens >= 300, repeats: repeatedSentence(text) ?? null };
  // The answer is shown when it is not brief.
  expect({ ...verdict, text: verdict.long || verdict.repeats ? text : '' }).toEqual({ long: false, repeats: null, text: '' });
}

describe('the first answer on the embedded model', () => {
  it("answers the README's first curl and its OpenAI client line briefly, and thirty hellos in all, with the default instructions and the server's sampling", async () => {
    // The README's commands as a new user pastes them, against this deployment's port.
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    // Its curl, then its line through OpenAI's client, as a new user pastes them, against this deployment's port.
    const [curl, openai] = [...readme.slice(readme.indexOf('Then, with the stack up:')).matchAll(/```sh\n([\s\S]*?)```/g)].slice(0, 2).map((m) => m[1]);
    expect(curl).toContain('localhost:8080/api/v2/responses');
    expect(openai).toContain("require('openai')");
    const script = `${curl}\necho\n${openai}\necho "$KEY $AGENT"`.replaceAll('localhost:8080', new URL(api.url).host);
    const { stdout } = await promisify(execFile)('bash', ['-c', script], { cwd: ROOT, env: { ...process.env, DATABASE_URL: database.url } });
    const [answer, message, ids] = stdout.trim().split('\n').slice(-3);
    const [key, agent] = ids.split(' ');
    const first = JSON.parse(answer);
    expectBrief(first);
    // The chat completion of the same agent: a real model's answer in OpenAI's shape.
    expect(JSON.parse(message)).toEqual({ role: 'assistant', content: expect.stringMatching(/\S/), refusal: null });
    expect(repeatedSentence(JSON.parse(message).content)).toBeUndefined();

    // Two at a time, as the json_object runs below: the model server is shared with the suite's other
    // real-model tests, and eight at a time let a slow machine (CI: 8 hellos behind other suites' calls)
    // run one past its 120 s, where the answer's length, not the machine's speed, is what is tested.
    const more = [];
    for (let pair = 0; pair < 28; pair += 2) {
      const asked = [0, 1].map(() => call(api.url, 'POST', '/api/v2/responses', { key, body: { agent, input: 'hello', timeout_ms: TIMEOUT_MS } }));
      more.push(...(await Promise.all(asked)));
    }
    for (const res of more) {
      expect(res.status).toBe(200);
      expectBrief(res.body);
    }
    // Not by luck: every call carried the default instructions and an output cap inside the slot,
    // and the server samples as workers/modelServer.py sets it.
    const sent = await providerRequests('default', relayUrl);
    expect(sent.filter((r) => !r.aborted).length).toBe(30);
    for (const r of sent) {
      expect(r.body.messages).toEqual([{ role: 'system', content: DEFAULT_INSTRUCTIONS }, { role: 'user', content: 'hello' }]);
      expect(r.body.max_tokens).toBeLessThanOrEqual(SLOT_TOKENS);
    }
    const props = (await (await fetch(`${relayUrl}/props`)).json()) as { default_generation_settings: { n_ctx: number; params: Record<string, number> } };
    expect(props.default_generation_settings.n_ctx).toBe(SLOT_TOKENS);
    // DRY over the whole slot, named in tokens: llama.cpp's -1 left it off.
    expect(props.default_generation_settings.params).toMatchObject({ repeat_penalty: expect.closeTo(1.1, 5), dry_multiplier: expect.closeTo(0.8, 5), dry_penalty_last_n: SLOT_TOKENS, temperature: expect.closeTo(0.2, 5) });
  });

  it("holds credits for what the model's window lets a call produce, not for the 4,096-token default", async () => {
    const t = await tenant({ scopes: ['responses:create'], credits: 1_000 });
    const refused = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input: 'hello' } });
    expect(refused.status).toBe(402);
    // One call, whose prompt and output share the 2,048-token slot.
    expect(refused.body.error.message).toContain(`up to ${SLOT_TOKENS} credits`);
    const enough = await tenant({ scopes: ['responses:create'], credits: SLOT_TOKENS });
    const served = await call(api.url, 'POST', '/api/v2/responses', { key: enough.key, body: { agent: enough.agent, input: 'hello', timeout_ms: TIMEOUT_MS } });
    expect(served.status).toBe(200);
    expectBrief(served.body);
  });

  it("carries a conversation past the model's window: every turn completes, the oldest turns give way, the instructions stay", async () => {
    const instructions = 'You are Zed, a note-taking assistant. Acknowledge each note in one short sentence.';
    // An output cap whose history budget (memory's 20 messages of it) is past the window: the window decides what is sent.
    const t = await tenant({ scopes: ['conversations:create', 'messages:create', 'logs:read'], config: { instructions, max_output_tokens: 256 } });
    const conv = (await call(api.url, 'POST', '/api/v2/conversations', { key: t.key, body: { agent: t.agent } })).body.id;
    // About 500 of the model's tokens each: six of them are half as much again as the slot. Few turns, as
    // a trimmed prompt misses llama.cpp's prompt cache and is read again whole (about 1,800 tokens a turn):
    // 24 notes half this size took 135 s on an idle machine and past 15 minutes on a loaded CI machine; these take 27 s.
    const TURNS = 6;
    const note = (n: number) =>
      `Note ${n}: ` +
      Array.from({ length: 18 }, (_, i) => `On day ${n * 100 + i} the team reviewed item ${i} of the plan, agreed on the next step, and wrote down who owns it and when it is due.`).join(' ');
    for (let turn = 1; turn <= TURNS; turn++) {
      const res = await call(api.url, 'POST', `/api/v2/conversations/${conv}/messages`, { key: t.key, body: { input: note(turn), timeout_ms: TIMEOUT_MS } });
      expect({ turn, status: res.status, run: res.body.status }).toEqual({ turn, status: 200, run: 'completed' });
    }
    const sent = (await providerRequests(t.model, relayUrl)).filter((r) => !r.aborted);
    expect(sent).toHaveLength(TURNS);
    for (const [i, r] of sent.entries()) {
      const messages = r.body.messages as { role: string; content: string }[];
      expect(messages[0]).toEqual({ role: 'system', content: instructions });
      expect(messages.at(-1)).toEqual({ role: 'user', content: note(i + 1) });
      // The history, when there is one, begins with a whole turn.
      if (messages.length > 2) expect(messages[1].role).toBe('user');
      expect(r.relayedUsage!.prompt_tokens + r.relayedUsage!.completion_tokens).toBeLessThanOrEqual(SLOT_TOKENS);
    }
    // The conversation outgrew the window: late turns sent only their latest history.
    expect((sent.at(-1)!.body.messages as unknown[]).length).toBeLessThan(2 * TURNS);
    const logs = (await call(api.url, 'GET', `/api/v2/logs?limit=${TURNS}`, { key: t.key })).body.data as { history_omitted: number }[];
    expect(logs).toHaveLength(TURNS);
    // Newest first: the last turn left earlier messages out, the first had none to leave.
    expect(logs[0].history_omitted).toBeGreaterThan(0);
    expect(logs.at(-1)!.history_omitted).toBe(0);
  });

  it('answers every json_object run with a JSON object, asked with the bounded grammar', async () => {
    // A cap as an agent with structured output sets one, above the longest object the grammar lets
    // the model write in practice, below a loop's 2,000: a loaded machine finishes every run in time.
    const t = await tenant({ scopes: ['responses:create'], config: { max_output_tokens: 768 } });
    // Two at a time: each run has the most of the machine its 120 s allow, however loaded the machine.
    const answers = [];
    for (let i = 0; i < JSON_PROMPTS.length; i += 2) {
      answers.push(...(await Promise.all(JSON_PROMPTS.slice(i, i + 2).map((input) => call(api.url, 'POST', '/api/v2/responses', { key: t.key, body: { agent: t.agent, input, response_format: { type: 'json_object' }, timeout_ms: TIMEOUT_MS } })))));
    }
    const requests = await providerRequests(t.model, relayUrl);
    // Under llama.cpp's own json_object grammar about one call in eleven looped to the cap and one run
    // in a hundred or so lost its repair too (docs/performance.md): each run is shown with why its calls ended.
    const runs = answers.map((res, i) => ({
      input: JSON_PROMPTS[i],
      status: res.status,
      output: res.body.output,
      calls: requests.filter((r) => (r.body.messages as { role: string; content: unknown }[]).some((m) => m.role === 'user' && m.content === JSON_PROMPTS[i])).map((c) => c.relayedFinish),
    }));
    expect(runs).toEqual(runs.map((r) => ({ ...r, status: 200, output: [{ type: 'json', json: expect.any(Object) }] })));
    // Asked as the operator configured: llama.cpp's grammar field with the bounded grammar, never json_object.
    for (const r of requests) {
      expect(r.body.grammar).toBe(readFileSync(JSON_OBJECT_GRAMMAR, 'utf8'));
      expect(r.body.response_format).toBeUndefined();
      expect(r.relayedUsage!.prompt_tokens + r.relayedUsage!.completion_tokens).toBeLessThanOrEqual(SLOT_TOKENS);
    }
  });
});
