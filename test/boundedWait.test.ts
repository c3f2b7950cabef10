import { Client } from 'pg';
import { QueryTypes } from 'sequelize';
import { db } from '../db/sequelize';
import { call, callsHeld, releaseHeld, scriptModel, tenant, until, useApi } from './support/stack';

// Read by this file's own config(): the API waits timeout_ms plus half a second, not plus 30 s.
process.env.API_WAIT_GRACE_MS = '500';

const api = useApi();

describe('a run that is not over within timeout_ms plus the grace', () => {
  it('is answered 202 with the run as it stands, not stored for replay, and a retry with the key answers its outcome', async () => {
    const t = await tenant();
    await scriptModel(t.model, [{ text: 'late but whole', hold: true }]);
    // 6 s: room for the call to be released well inside the run's deadline, however slow the machine.
    const body = { agent: t.agent, input: 'hi', timeout_ms: 6000 };
    const headers = { 'Idempotency-Key': 'slow-settlement' };
    const first = call(api.url, 'POST', '/api/v2/responses', { key: t.key, body, headers });
    // A database that holds the run's row (as in an outage): the settlement waits, and retries, until it lets go.
    const blocker = new Client({ connectionString: process.env.DATABASE_URL });
    await blocker.connect();
    let answered;
    try {
      await blocker.query('BEGIN');
      await until(async () => ((await blocker.query(`SELECT 1 FROM runs r JOIN workspaces w ON w.id = r.workspace_id WHERE w.public_id = $1 FOR UPDATE OF r`, [t.workspace])).rowCount ? true : undefined), 'the run to be recorded');
      // The reply comes only once the row is held, so the settlement always finds it locked.
      await callsHeld(t.model, 1, 'the model call');
      await releaseHeld(t.model);
      answered = await first;
      expect(answered.status).toBe(202);
      expect(answered.body).toMatchObject({ status: 'running', output: [] });
      expect(answered.headers.get('location')).toBe(`/api/v2/runs/${answered.body.id}`);
      expect((await call(api.url, 'GET', `/api/v2/runs/${answered.body.id}`, { key: t.key })).body.status).toBe('running');
    } finally {
      await blocker.query('COMMIT');
      await blocker.end();
    }

    const retry = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body, headers });
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotency-replayed')).toBe('true');
    expect(retry.body).toMatchObject({ id: answered.body.id, status: 'completed', output: [{ type: 'text', text: 'late but whole' }] });
    const [bill] = await db().query<{ lines: number }>('SELECT count(*)::int AS lines FROM ledger_lines l JOIN runs r ON r.id = l.run_id WHERE r.public_id = :id', {
      replacements: { id: answered.body.id },
      type: QueryTypes.SELECT,
    });
    expect(bill.lines).toBe(1);
  });
});
