import { Client } from 'pg';
import { QueryTypes } from 'sequelize';
import { db } from '../db/sequelize';
import { call, tenant, useApi } from './support/stack';

// Read by this file's own config(): the API waits timeout_ms plus half a second, not plus 30 s.
process.env.API_WAIT_GRACE_MS = '500';

const api = useApi();

describe('a run that is not over within timeout_ms plus the grace', () => {
  it('is answered 202 with the run as it stands, not stored for replay, and a retry with the key answers its outcome', async () => {
    const t = await tenant();
    const [ws] = await db().query<{ id: number }>('SELECT id FROM workspaces WHERE public_id = :ws', { replacements: { ws: t.workspace }, type: QueryTypes.SELECT });
    // A database that cannot take the settlement's debit (as in an outage): settlement waits and retries.
    const blocker = new Client({ connectionString: process.env.DATABASE_URL });
    await blocker.connect();
    await blocker.query('BEGIN');
    await blocker.query('SELECT 1 FROM workspaces WHERE id = $1 FOR NO KEY UPDATE', [ws.id]);
    const body = { agent: t.agent, input: 'hi', timeout_ms: 1000 };
    const headers = { 'Idempotency-Key': 'slow-settlement' };
    let first;
    try {
      first = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body, headers });
      expect(first.status).toBe(202);
      expect(first.body).toMatchObject({ status: 'running', output: [] });
      expect(first.headers.get('location')).toBe(`/api/v2/runs/${first.body.id}`);
      expect((await call(api.url, 'GET', `/api/v2/runs/${first.body.id}`, { key: t.key })).body.status).toBe('running');
    } finally {
      await blocker.query('COMMIT');
      await blocker.end();
    }

    const retry = await call(api.url, 'POST', '/api/v2/responses', { key: t.key, body, headers });
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotency-replayed')).toBe('true');
    expect(retry.body).toMatchObject({ id: first.body.id, status: 'completed' });
    const [bill] = await db().query<{ lines: number }>('SELECT count(*)::int AS lines FROM ledger_lines l JOIN runs r ON r.id = l.run_id WHERE r.public_id = :id', {
      replacements: { id: first.body.id },
      type: QueryTypes.SELECT,
    });
    expect(bill.lines).toBe(1);
  });
});
