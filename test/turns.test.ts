import { Client, Connection } from '@temporalio/client';
import { QueryTypes } from 'sequelize';
import { reserveTurn } from '../db/creditReservations';
import { db } from '../db/sequelize';
import { transaction } from '../db/sql';
import { mintId } from '../domain/ids';
import { MAX_OPEN_TURNS } from '../domain/turns';
import { turnIsNext } from '../activities/turns';
import { dataConverter } from '../infra/payloadCodec';
import { reconcileNow } from '../workflowClients/reconcileRuns.client';
import { type Answer, call, callsHeld, heldRequests, providerRequests, releaseHeld, scriptModel, tenant, type Tenant, until, useApi } from './support/stack';
import { DEFAULT_INSTRUCTIONS } from '../domain/agents';

const api = useApi();
let client: Client;
beforeAll(async () => {
  client = new Client({ connection: await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! }), dataConverter });
});
afterAll(() => client.connection.close());
// A test that fails while the stub holds a call must not leave it (and its run) waiting.
const models: string[] = [];
afterEach(async () => {
  for (const model of models.splice(0)) await releaseHeld(model);
});

const SCOPES = ['conversations:create', 'messages:create', 'messages:read'];

async function conversation(t: Tenant): Promise<{ id: string; key: number }> {
  models.push(t.model);
  const id = (await call(api.url, 'POST', '/api/v2/conversations', { key: t.key, body: { agent: t.agent } })).body.id as string;
  const [row] = await db().query<{ key: string }>('SELECT id AS key FROM conversations WHERE public_id = :id', { replacements: { id }, type: QueryTypes.SELECT });
  return { id, key: Number(row.key) };
}
const post = (t: Tenant, conv: string, body: Record<string, unknown>): Promise<Answer> => call(api.url, 'POST', `/api/v2/conversations/${conv}/messages`, { key: t.key, body });

/** The conversation's open turns (their credit holds), oldest first. */
async function openTurns(conv: number): Promise<{ run: string; turn: number }[]> {
  const rows = await db().query<{ run: string; turn: string }>('SELECT run_public_id AS run, turn FROM credit_reservations WHERE conversation_id = :conv ORDER BY turn', {
    replacements: { conv },
    type: QueryTypes.SELECT,
  });
  return rows.map((r) => ({ run: r.run, turn: Number(r.turn) }));
}

/** Until the queued run has looked at its turn and waits (a timer: the periodic look). */
async function waiting(runId: string): Promise<void> {
  await until(async () => {
    const events = (await client.workflow.getHandle(runId).fetchHistory()).events ?? [];
    return events.some((e) => e.timerStartedEventAttributes) || undefined;
  }, `run ${runId} waiting for its turn`);
}

/** Posts the conversation's first turn, whose model call the stub holds (scripted with `hold`), and waits for that call. */
async function heldFirstTurn(t: Tenant, conv: string): Promise<{ answer: Promise<Answer> }> {
  const answer = post(t, conv, { input: 'one' });
  await callsHeld(t.model, 1, 'the first turn’s call');
  return { answer };
}

/** The conversation's open turns once there are `n`. */
const openTurnsOnce = (conv: number, n: number) =>
  until(async () => {
    const open = await openTurns(conv);
    return open.length === n ? open : undefined;
  }, `${n} open turns`);

const texts = (a: Answer) => (a.body.output as { text?: string }[]).map((o) => o.text);

describe('turns of one conversation', () => {
  it('enqueue (the default): five messages posted at once run one after another, each seeing the turns before it', async () => {
    const t = await tenant({ scopes: SCOPES });
    const conv = await conversation(t);
    await scriptModel(t.model, [1, 2, 3, 4, 5].map((n) => ({ text: `reply ${n}` })));
    const inputs = ['a', 'b', 'c', 'd', 'e'];
    const answers = await Promise.all(inputs.map((input) => post(t, conv.id, { input })));
    expect(answers.map((a) => [a.status, a.body.status])).toEqual(inputs.map(() => [200, 'completed']));

    const requests = await providerRequests(t.model);
    expect(requests).toHaveLength(5);
    // Each call's history is the one before it, its reply, and its own message: no turn ran beside another.
    const messages = requests.map((r) => r.body.messages as { role: string; content: string }[]);
    expect(messages[0]).toEqual([{ role: 'system', content: DEFAULT_INSTRUCTIONS }, { role: 'user', content: expect.any(String) }]);
    for (let k = 1; k < 5; k++) {
      expect(messages[k]).toEqual([...messages[k - 1], { role: 'assistant', content: `reply ${k}` }, { role: 'user', content: expect.any(String) }]);
    }
    const order = messages[4].filter((m) => m.role === 'user').map((m) => m.content);
    expect([...order].sort()).toEqual(inputs);
    // Each post was answered with its own turn's reply.
    for (const [i, input] of inputs.entries()) expect(texts(answers[i])).toEqual([`reply ${order.indexOf(input) + 1}`]);
    expect(await openTurns(conv.key)).toEqual([]);
  });

  it('reject: refused with 409 conversation_busy while a turn is open, holding nothing; accepted once the conversation is idle', async () => {
    const t = await tenant({ scopes: SCOPES });
    const conv = await conversation(t);
    await scriptModel(t.model, [{ text: 'first', hold: true }, { text: 'third' }]);
    const first = (await heldFirstTurn(t, conv.id)).answer;

    const refused = await post(t, conv.id, { input: 'two', concurrency: 'reject' });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'conversation_busy', message: expect.stringContaining('concurrency: reject') });
    expect((await openTurns(conv.key)).length).toBe(1);

    await releaseHeld(t.model);
    expect(texts(await first)).toEqual(['first']);
    const later = await post(t, conv.id, { input: 'three', concurrency: 'reject' });
    expect(later.status).toBe(200);
    const page = await call(api.url, 'GET', `/api/v2/conversations/${conv.id}/messages`, { key: t.key });
    expect(page.body.data.map((m: { role: string; content: unknown }) => (m.role === 'user' ? m.content : (m.content as { text: string }[])[0].text))).toEqual(['one', 'first', 'three', 'third']);
  });

  it('interrupt: the open turn is cancelled and settled, and the new one runs after it', async () => {
    const t = await tenant({ scopes: SCOPES });
    const conv = await conversation(t);
    await scriptModel(t.model, [{ text: 'never said', hold: true }, { text: 'second' }]);
    const first = (await heldFirstTurn(t, conv.id)).answer;

    const second = await post(t, conv.id, { input: 'two', concurrency: 'interrupt' });
    expect(second.status).toBe(200);
    expect(texts(second)).toEqual(['second']);
    expect((await first).body.status).toBe('cancelled');
    const [, call2] = await providerRequests(t.model);
    expect(call2.body.messages).toEqual([
      { role: 'system', content: DEFAULT_INSTRUCTIONS },
      { role: 'user', content: 'one' },
      { role: 'user', content: 'two' },
    ]);
  });

  it('a queued turn waits for every turn before it, not only the one just before: one cancelled in the queue does not let those behind it pass', async () => {
    const t = await tenant({ scopes: SCOPES });
    const conv = await conversation(t);
    await scriptModel(t.model, [{ text: 'first', hold: true }, { text: 'third' }]);
    const first = (await heldFirstTurn(t, conv.id)).answer;
    const second = post(t, conv.id, { input: 'two' });
    const [, queued] = await openTurnsOnce(conv.key, 2);
    const third = post(t, conv.id, { input: 'three' });
    const [, , last] = await openTurnsOnce(conv.key, 3);
    await waiting(queued.run);

    const cancelled = await call(api.url, 'POST', `/api/v2/runs/${queued.run}/cancel`, { key: t.key });
    expect(cancelled.status).toBe(200);
    expect((await second).body.status).toBe('cancelled');
    // The first turn is still running: the third is not next.
    expect(await turnIsNext({ conversationId: conv.key, number: last.turn })).toBe(false);
    expect(await heldRequests(t.model)).toBe(1);

    await releaseHeld(t.model);
    expect(texts(await first)).toEqual(['first']);
    const answer = await third;
    expect(texts(answer)).toEqual(['third']);
    // The turn cancelled in the queue never had its turn: its message is not in the conversation.
    const [, call2] = await providerRequests(t.model);
    expect(call2.body.messages).toEqual([
      { role: 'system', content: DEFAULT_INSTRUCTIONS },
      { role: 'user', content: 'one' },
      { role: 'assistant', content: 'first' },
      { role: 'user', content: 'three' },
    ]);
  });

  it('a queued turn that fails once its turn came keeps its message, unlike one cancelled in the queue', async () => {
    const t = await tenant({ scopes: SCOPES });
    const conv = await conversation(t);
    await scriptModel(t.model, [{ text: 'first', hold: true }]);
    const first = (await heldFirstTurn(t, conv.id)).answer;
    // Refused after its wait: the agent has no knowledge and the message requires retrieval.
    const second = post(t, conv.id, { input: 'two', knowledge_policy: 'required' });
    const [, queued] = await openTurnsOnce(conv.key, 2);
    await waiting(queued.run);
    await releaseHeld(t.model);
    expect(texts(await first)).toEqual(['first']);
    const refused = await second;
    expect([refused.status, refused.body.error.code]).toEqual([503, 'knowledge_unavailable']);
    const page = await call(api.url, 'GET', `/api/v2/conversations/${conv.id}/messages`, { key: t.key });
    expect(page.body.data.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant', 'user']);
  });

  it('a turn whose run never started holds the conversation until the reconciler gives its hold back', async () => {
    const t = await tenant({ scopes: SCOPES });
    const conv = await conversation(t);
    const [ws] = await db().query<{ id: string }>('SELECT id FROM workspaces WHERE public_id = :id', { replacements: { id: t.workspace }, type: QueryTypes.SELECT });
    // As if the API that accepted it died before starting its workflow: a hold, no workflow.
    const ghost = mintId('run');
    await transaction((tx) => reserveTurn(Number(ws.id), ghost, 10, conv.key, tx));

    await scriptModel(t.model, [{ text: 'after all' }]);
    const pending = post(t, conv.id, { input: 'hello' });
    const [, queued] = await openTurnsOnce(conv.key, 2);
    await waiting(queued.run);
    expect(await providerRequests(t.model)).toHaveLength(0);
    expect((await call(api.url, 'GET', `/api/v2/runs/${queued.run}`, { key: t.key })).body.status).toBe('queued');

    // Old enough for the reconciler now; a pass that looks only at holds older than five minutes leaves other test files' runs alone.
    await db().query("UPDATE credit_reservations SET created_at = now() - interval '10 minutes' WHERE run_public_id = :ghost", { replacements: { ghost } });
    await reconcileNow(client, 5 * 60_000);
    // Given back by this pass, or by the scheduled one if it came first.
    expect((await openTurns(conv.key)).map((o) => o.run)).not.toContain(ghost);
    const answer = await pending;
    expect(answer.body.status).toBe('completed');
    expect(texts(answer)).toEqual(['after all']);
  });

  it(`refuses a turn beyond ${MAX_OPEN_TURNS} open ones under any policy, and an unknown policy with 400`, async () => {
    const t = await tenant({ scopes: SCOPES });
    const conv = await conversation(t);
    const [ws] = await db().query<{ id: string }>('SELECT id FROM workspaces WHERE public_id = :id', { replacements: { id: t.workspace }, type: QueryTypes.SELECT });
    // Open turns as held by runs not started yet (young: the reconciler leaves them), then given back.
    const ghosts = Array.from({ length: MAX_OPEN_TURNS }, () => mintId('run'));
    for (const ghost of ghosts) await transaction((tx) => reserveTurn(Number(ws.id), ghost, 1, conv.key, tx));
    try {
      const refused = await post(t, conv.id, { input: 'one too many' });
      expect(refused.status).toBe(409);
      expect(refused.body.error.code).toBe('conversation_busy');
      expect((await openTurns(conv.key)).length).toBe(MAX_OPEN_TURNS);
    } finally {
      await db().query('DELETE FROM credit_reservations WHERE run_public_id IN (:ghosts)', { replacements: { ghosts } });
    }
    const unknown = await post(t, conv.id, { input: 'hi', concurrency: 'queue' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.message).toMatch(/concurrency must be one of/);
  });
});
