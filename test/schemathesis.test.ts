import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as admin from '../admin/commands';
import { isStaffScope } from '../domain/scopes';
import { resetConfig } from '../infra/config';
import { uploadedDocument } from './support/documents';
import { call, tenant, useApi } from './support/stack';

/**
 * Schemathesis (PyPI, installed into .tools/schemathesis/ by workers/setup.sh --test) generates requests from the
 * served OpenAPI document, valid and invalid, and checks every answer: no 5xx, a documented status,
 * a body valid against the documented schema. Once with a workspace key holding every customer
 * scope, once with the operator token on the codec, once with a partner key on the partner paths.
 */

// Generated traffic far exceeds a workspace's 300 calls a minute; the limits have tests of their own.
for (const dimension of ['CREDENTIAL', 'TENANT', 'TENANT_ENDPOINT', 'AGENT', 'PRINCIPAL']) process.env[`RATE_LIMIT_${dimension}`] = '0';
// The codec is on (401 to any other credential), and one run sends its token.
const OPERATOR_TOKEN = 'operator-token-for-schemathesis';
process.env.CODEC_OPERATOR_TOKEN = OPERATOR_TOKEN;
resetConfig();

const api = useApi();
const SCHEMATHESIS = path.resolve(__dirname, '../.tools/schemathesis/bin/schemathesis');
/** Fixed, so a failure reproduces; SCHEMATHESIS_SEED explores other inputs. */
const SEED = process.env.SCHEMATHESIS_SEED ?? '20260907';

/** Realistic data where the document cannot say it: ids that name something, a recovery window relative to now. */
const HOOKS = path.resolve(__dirname, 'support/schemathesis_hooks.py');

const scratch = mkdtempSync(path.join(tmpdir(), 'schemathesis-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/**
 * Methods a path does not document are answered 501 `not_implemented` by design (docs/api.md,
 * "Unknown paths"), which schemathesis would count as server errors: it sends only documented methods.
 * An operation that refuses most of the data its document allows (`validation_mismatch`) fails the
 * run: the document and the validation have drifted apart.
 */
const BASE_CONFIG = '[warnings]\nfail-on = ["validation_mismatch"]\n\n[phases.coverage]\nunexpected-methods = []\n';

function schemathesis(args: string[], config: string, data: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  const configFile = path.join(scratch, `${Math.random().toString(36).slice(2)}.toml`);
  writeFileSync(configFile, BASE_CONFIG + config);
  const command = [
    '--config-file', configFile, '--no-color', 'run', `${api.url}/api/v2/openapi.json`,
    '--checks', 'not_a_server_error,status_code_conformance,response_schema_conformance',
    '--max-examples', '5', '--seed', SEED, '--workers', '2', '--request-timeout', '30',
    '--suppress-health-check', 'all', '--generation-database', 'none', '--continue-on-failure', '--no-shrink',
    ...args,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(SCHEMATHESIS, command, { cwd: scratch, env: { ...process.env, SCHEMATHESIS_HOOKS: HOOKS, SCHEMATHESIS_DATA: JSON.stringify(data) } });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

/** Exit code 0 is no failure; otherwise the report is the assertion's message. */
function expectClean(result: { code: number | null; output: string }): void {
  if (result.code !== 0) throw new Error(`schemathesis found failures (exit ${result.code}):\n${result.output}`);
  expect(result.output).toMatch(/No issues found|passed/);
}

it('finds no server error and no answer off the document with a workspace key', async () => {
  const scopes = admin.listScopes().scopes.filter((s) => !isStaffScope(s));
  const t = await tenant({ scopes });
  // A real agent, conversation and document, so generated requests get past resolution and really run.
  const conversation = await call(api.url, 'POST', '/api/v2/conversations', { key: t.key, body: { agent: t.agent } });
  const document = await uploadedDocument(api.url, t.key, 'notes.txt', 'text/plain', Buffer.from('Invoice 42 is due on Friday.'));
  // The coverage phase sends its bodies without the hooks, so a schedule's agent (and its cron and run), and the /v1
  // surface's model, are generated and every one is refused; fuzzing and stateful test them with the hooks' agent.
  // The spec's 503 knowledge_unavailable (knowledge_policy `required` for an agent with no knowledge, as this one) is an answer, not a crash;
  // so is 502 provider_unavailable, the answer of a run past its timeout_ms (coverage sends the least, 1 s, which a loaded machine can miss).
  const config = [
    `[parameters]\n"path.agent_id" = "${t.agent}"\n`,
    '[[operations]]\ninclude-operation-id = ["createSchedule", "createChatCompletion", "createResponseV1"]\nphases.coverage.enabled = false\n',
    '[[operations]]\ninclude-operation-id = ["createResponse", "createAgentRun", "createMessage", "createChatCompletion", "createResponseV1"]\nchecks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", 502, 503]\n',
  ].join('\n');
  // GET and DELETE /mcp answer nothing but 405 by design (no event stream, no sessions); the codec takes only the operator's token (below).
  const excluded = ['--exclude-operation-id', 'mcpGet', '--exclude-operation-id', 'mcpDelete', '--exclude-path-regex', '^/api/v1/partner/|^/codec/'];
  expectClean(await schemathesis(['--header', `Authorization: Bearer ${t.key}`, ...excluded], config, { agent: t.agent, conversation: conversation.body.id, document }));
}, 240_000);

it('finds no server error and no answer off the document on the codec with the operator token', async () => {
  expectClean(await schemathesis(['--header', `Authorization: Bearer ${OPERATOR_TOKEN}`, '--include-path-regex', '^/codec/'], ''));
}, 120_000);

it('finds no server error and no answer off the document with a partner key', async () => {
  const partner = await admin.createPartner({ name: 'schemathesis' });
  const key = await admin.createPartnerKey({ partner: partner.id, scopes: 'webhooks:read,webhooks:write' });
  const endpoint = await call(api.url, 'POST', '/api/v1/partner/webhooks/endpoints/', { key: key.key, body: { url: 'http://127.0.0.1:9/schemathesis', enabled_events: ['*'] } });
  expect(endpoint.status).toBe(201);
  // The coverage phase sends its fixed boundary dates (2000-01-01) without the hooks; the window is tested by the others.
  const recoverWithHooksOnly = '[[operations]]\ninclude-operation-id = "recoverWebhookDeliveries"\nphases.coverage.enabled = false\n';
  expectClean(await schemathesis(['--header', `Authorization: Bearer ${key.key}`, '--include-path-regex', '^/api/v1/partner/'], recoverWithHooksOnly, { endpoint: endpoint.body.id }));
}, 120_000);
