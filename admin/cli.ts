import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ValidationError } from 'yup';
import { ServiceError } from '../domain/errors';
import { closeDb } from '../db/sequelize';
import { closeRedis } from '../infra/redis';
import * as admin from './commands';
import { watchJob } from './jobWatch';

/**
 * The admin CLI, stand-in for the dashboard (DESIGN.md §3). Each command prints one JSON object on
 * stdout and exits 0, or an error object on stderr and exits non-zero.
 */
const USAGE = `usage: admin <command> [options]
  scope list
  workspace create --name N [--credits N] [--partner ID --tenant-ref REF] [--usage-threshold N]
  workspace credit --workspace ID --amount N
  key create --workspace ID --scopes a,b [--environment live|test] [--expires-at ISO8601] [--name N]
  key revoke --id KEY_ID
  partner create --name N [--webhook-rate N]   (deliveries per second to its webhook endpoints; default WEBHOOK_PARTNER_RATE)
  partner key create --partner ID --scopes a,b [--expires-at ISO8601] [--name N]
  agent create --workspace ID --name N [--status active|draft|paused|preview|archived] [--config FILE]
  agent update --agent ID --config FILE
  agent publish --agent ID
  agent set-status --agent ID --status S
  member create --workspace ID --email E [--role owner|developer|viewer]   (prints a one-time set-up link for the dashboard)
  member revoke --id MEMBER_ID   (ends their dashboard sessions and OAuth grants and tokens)
  secret set --workspace ID --name NAME --value VALUE|- [--origin https://host[/prefix/]]   (sealed at rest; sent only under that origin and path prefix, or its first use's origin and path up to its last /; prints {"name":…}, never the value; - reads it from standard input)
  secret list --workspace ID   (names and times, never values)
  secret delete --workspace ID --name NAME
  job watch --job ID   (a progress bar on stderr until the job ends; its record on stdout)`;

const OPTIONS = {
  name: { type: 'string' },
  credits: { type: 'string' },
  partner: { type: 'string' },
  'tenant-ref': { type: 'string' },
  'usage-threshold': { type: 'string' },
  workspace: { type: 'string' },
  amount: { type: 'string' },
  scopes: { type: 'string' },
  environment: { type: 'string' },
  'expires-at': { type: 'string' },
  id: { type: 'string' },
  agent: { type: 'string' },
  status: { type: 'string' },
  config: { type: 'string' },
  job: { type: 'string' },
  'webhook-rate': { type: 'string' },
  email: { type: 'string' },
  role: { type: 'string' },
  value: { type: 'string' },
  origin: { type: 'string' },
} as const;

type Values = Partial<Record<keyof typeof OPTIONS, string>>;

function required(values: Values, ...names: (keyof typeof OPTIONS)[]): void {
  const missing = names.filter((n) => values[n] === undefined);
  if (missing.length) throw new admin.AdminError(`missing ${missing.map((n) => `--${n}`).join(', ')}`);
}

function readConfig(file: string | undefined): unknown {
  if (file === undefined) return undefined;
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new admin.AdminError(`--config ${file}: ${(err as Error).message}`);
  }
}

async function run(argv: string[]): Promise<unknown> {
  const { values: v, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  const command = positionals.join(' ');
  switch (command) {
    case 'workspace create':
      required(v, 'name');
      return admin.createWorkspace({ name: v.name!, credits: v.credits, partner: v.partner, tenantRef: v['tenant-ref'], usageThreshold: v['usage-threshold'] });
    case 'workspace credit':
      required(v, 'workspace', 'amount');
      return admin.creditWorkspace({ workspace: v.workspace!, amount: v.amount! });
    case 'key create':
      required(v, 'workspace', 'scopes');
      return admin.createWorkspaceKey({ workspace: v.workspace!, scopes: v.scopes!, environment: v.environment, expiresAt: v['expires-at'], name: v.name });
    case 'key revoke':
      required(v, 'id');
      return admin.revokeKey({ id: v.id! });
    case 'member create':
      required(v, 'workspace', 'email');
      return admin.createMember({ workspace: v.workspace!, email: v.email!, role: v.role });
    case 'member revoke':
      required(v, 'id');
      return admin.revokeMember({ id: v.id! });
    case 'partner create':
      required(v, 'name');
      return admin.createPartner({ name: v.name!, webhookRate: v['webhook-rate'] });
    case 'partner key create':
      required(v, 'partner', 'scopes');
      return admin.createPartnerKey({ partner: v.partner!, scopes: v.scopes!, expiresAt: v['expires-at'], name: v.name });
    case 'agent create':
      required(v, 'workspace', 'name');
      return admin.createAgent({ workspace: v.workspace!, name: v.name!, status: v.status, config: readConfig(v.config) });
    case 'agent update':
      required(v, 'agent', 'config');
      return admin.updateAgentDraft({ agent: v.agent!, config: readConfig(v.config) });
    case 'agent publish':
      required(v, 'agent');
      return admin.publishAgent({ agent: v.agent! });
    case 'agent set-status':
      required(v, 'agent', 'status');
      return admin.setAgentStatus({ agent: v.agent!, status: v.status! });
    case 'secret set':
      required(v, 'workspace', 'name', 'value');
      // `-`: read from standard input, so the value is in no process list or shell history.
      return admin.setSecret({ workspace: v.workspace!, name: v.name!, value: v.value === '-' ? readFileSync(0, 'utf8').replace(/\r?\n$/, '') : v.value!, ...(v.origin !== undefined && { origin: v.origin }) });
    case 'secret list':
      required(v, 'workspace');
      return admin.listSecrets({ workspace: v.workspace! });
    case 'secret delete':
      required(v, 'workspace', 'name');
      return admin.deleteSecret({ workspace: v.workspace!, name: v.name! });
    case 'scope list':
      return admin.listScopes();
    case 'job watch':
      required(v, 'job');
      return watchJob({ job: v.job! });
    default:
      throw new admin.AdminError(`unknown command "${command}"\n${USAGE}`);
  }
}

run(process.argv.slice(2))
  .then(async (result) => {
    process.stdout.write(JSON.stringify(result) + '\n');
    await Promise.all([closeDb(), closeRedis()]);
  })
  .catch(async (err) => {
    const known = err instanceof admin.AdminError || err instanceof ValidationError || err instanceof ServiceError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    process.stderr.write(JSON.stringify({ error: { message: known ? err.message : `unexpected failure: ${err?.message ?? err}` } }) + '\n');
    await Promise.all([closeDb(), closeRedis()]);
    process.exit(known ? 2 : 1);
  });
