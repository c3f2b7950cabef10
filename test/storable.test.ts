import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { QueryTypes } from 'sequelize';
import { db } from '../db/sequelize';
import { storable, storableJsonText } from '../domain/storable';
import { call, scriptModel, tenant, type Tenant, until, useApi } from './support/stack';
import { quotingMcpServer, type QuotingServer } from './support/quotingMcp';

/**
 * What PostgreSQL cannot store (a NUL, half a surrogate pair), from wherever it comes: a model's
 * reply, an HTTP tool's answer, an MCP server's result or error text. The run settles as it would
 * have, with each such character stored as U+FFFD; a settlement the database refuses all the same (a
 * data error) fails the run at once, charged nothing.
 */
const api = useApi();
/** A NUL and a lone surrogate between letters, as a model, a tool or a server may send them. */
const ODD = 'a\u0000b\ud800c';
/** ODD as stored. */
const STORED = 'a\uFFFDb\uFFFDc';

let toolServer: Server;
let toolUrl = '';
const servers: QuotingServer[] = [];
beforeAll(async () => {
  // Its answer's bytes: a NUL, and (UTF-8 has no lone surrogates) U+FFFD where the surrogate was.
  toolServer = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end(ODD));
  await new Promise<void>((resolve) => toolServer.listen(0, '127.0.0.1', resolve));
  toolUrl = `http://127.0.0.1:${(toolServer.address() as AddressInfo).port}/lookup`;
});
afterAll(async () => {
  toolServer.close();
  await Promise.all(servers.map((s) => s.close()));
});

const CREDITS = 1_000_000;
const agentRun = (t: Tenant, stream: boolean, extra: Record<string, unknown> = {}) => call(api.url, 'POST', `/api/v2/agents/${t.agent}/runs`, { key: t.key, body: { input: 'Go.', stream, ...extra } });

interface StoredRun {
  public_id: string;
  status: string;
  output: { type: string; text?: string }[] | null;
  error_code: string | null;
  error_message: string | null;
  /** The assistant's message, as the conversation keeps it. */
  message: { type: string; text?: string }[] | null;
  charged: string | null;
  balance: string;
  held: string | null;
}

/** The tenant's one run once settled, as the database holds it. */
const storedRun = (t: Tenant) =>
  until(async () => {
    const [row] = await db().query<StoredRun>(
      `SELECT r.public_id, r.status, r.output, r.error_code, r.error_message,
              (SELECT m.content FROM messages m WHERE m.run_id = r.id AND m.role = 'assistant') AS message,
              (SELECT sum(l.credits) FROM ledger_lines l WHERE l.run_id = r.id) AS charged, w.credits AS balance,
              (SELECT c.credits FROM credit_reservations c WHERE c.run_public_id = r.public_id) AS held
         FROM runs r JOIN workspaces w ON w.id = r.workspace_id WHERE w.public_id = :workspace`,
      { replacements: { workspace: t.workspace }, type: QueryTypes.SELECT },
    );
    return row && row.status !== 'running' && row.status !== 'queued' ? row : undefined;
  }, "the tenant's run to settle");

const quoting = async (json: boolean) => {
  const server = await quotingMcpServer(ODD, json);
  servers.push(server);
  return { type: 'mcp', server_label: 'odd', server_url: server.url, allowed_tools: ['quote', 'fail'] };
};

describe('values PostgreSQL cannot store', () => {
  it('are made storable in the one place statements are sent: text, JSON escapes, arrays and objects; other text and escaped backslashes as they are', () => {
    expect(storable(ODD)).toBe(STORED);
    expect(JSON.parse(storable(JSON.stringify({ text: ODD, pair: '😀', [ODD]: 1 })) as string)).toEqual({ text: STORED, pair: '😀', [STORED]: 1 });
    expect(storable([ODD, { [ODD]: [ODD] }, 7, null])).toEqual([STORED, { [STORED]: [STORED] }, 7, null]);
    // A backslash the text holds, then `u0000`: written out as such in JSON, and no escape.
    const literal = JSON.stringify({ text: '\\u0000 \\ud800' });
    expect(storableJsonText(literal)).toBe(literal);
    // Not JSON: a text column stores a backslash and `u0000` as they are.
    expect(storable('C:\\u0000')).toBe('C:\\u0000');
  });

  describe.each([
    ['plain', false],
    ['streamed', true],
  ])('%s', (_how, stream) => {
    it("a model's reply: completed, its output and message stored with U+FFFD", async () => {
      const t = await tenant({ scopes: ['agents:run'] });
      await scriptModel(t.model, [{ text: `Said: ${ODD}` }]);
      await agentRun(t, stream);
      const run = await storedRun(t);
      expect(run).toMatchObject({ status: 'completed', output: [{ type: 'text', text: `Said: ${STORED}` }], message: [{ type: 'text', text: `Said: ${STORED}` }], error_code: null });
    });

    it("an HTTP tool's answer, quoted by the model: completed, stored with U+FFFD", async () => {
      const t = await tenant({ scopes: ['agents:run'], config: { tools: [{ type: 'http', name: 'lookup', description: 'Look it up', parameters: { type: 'object' }, url: toolUrl }] } });
      await scriptModel(t.model, [{ toolCalls: [{ name: 'lookup', arguments: '{}' }] }, { echoToolResults: true }]);
      await agentRun(t, stream);
      expect(await storedRun(t)).toMatchObject({ status: 'completed', output: [{ type: 'text', text: STORED }] });
    });

    it("an MCP server's result, quoted by the model: completed, stored with U+FFFD", async () => {
      const t = await tenant({ scopes: ['agents:run'], config: { tools: [await quoting(!stream)] } });
      await scriptModel(t.model, [{ toolCalls: [{ name: 'odd__quote', arguments: '{}' }] }, { echoToolResults: true }]);
      await agentRun(t, stream);
      expect(await storedRun(t)).toMatchObject({ status: 'completed', output: [{ type: 'text', text: STORED }] });
    });

    it("an MCP server's error text, which fails a run whose tools are required: failed as it should be, the text stored with U+FFFD, charged", async () => {
      const t = await tenant({ scopes: ['agents:run'], config: { tools: [await quoting(!stream)] } });
      await scriptModel(t.model, [{ toolCalls: [{ name: 'odd__fail', arguments: '{}' }] }]);
      await agentRun(t, stream, { tool_policy: 'required' });
      const run = await storedRun(t);
      expect(run).toMatchObject({ status: 'failed', error_code: 'tool_execution_failed' });
      expect(run.error_message).toContain(STORED);
      expect(Number(run.charged)).toBeGreaterThan(0);
    });

    it("an MCP server's error text, quoted by the model when tools are not required: completed, stored with U+FFFD", async () => {
      const t = await tenant({ scopes: ['agents:run'], config: { tools: [await quoting(!stream)] } });
      await scriptModel(t.model, [{ toolCalls: [{ name: 'odd__fail', arguments: '{}' }] }, { echoToolResults: true }]);
      await agentRun(t, stream);
      const run = await storedRun(t);
      expect(run.status).toBe('completed');
      expect(run.output![0].text).toMatch(new RegExp(`^The tool failed: .*${STORED}`));
    });

    it('a settlement the database refuses (a usage past its integer columns: SQLSTATE 22003) fails the run at once as internal_error, charged nothing', async () => {
      const t = await tenant({ scopes: ['agents:run'], credits: CREDITS });
      await scriptModel(t.model, [{ text: 'A whole answer.', usage: { prompt_tokens: 3_000_000_000, completion_tokens: 5 } }]);
      await agentRun(t, stream);
      const run = await storedRun(t);
      expect(run).toMatchObject({ status: 'failed', error_code: 'internal_error', output: [], message: null, held: null });
      expect([Number(run.charged), Number(run.balance)]).toEqual([0, CREDITS]);
      // Settled by its workflow, not left open for the reconciler; its log entry is storable too.
      const [log] = await db().query<{ error_code: string; input_tokens: number; reconciled: boolean }>('SELECT l.error_code, l.input_tokens, r.reconciled_at IS NOT NULL AS reconciled FROM run_logs l JOIN runs r ON r.id = l.run_id WHERE r.public_id = :run', {
        replacements: { run: run.public_id },
        type: QueryTypes.SELECT,
      });
      expect(log).toEqual({ error_code: 'internal_error', input_tokens: 0, reconciled: false });
    });
  });
});
