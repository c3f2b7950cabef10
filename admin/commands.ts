import { AGENT_STATUSES, type AgentStatus } from '../domain/agents';
import { generateApiKey, hashApiKey, type KeyKind } from '../domain/apiKeys';
import { mintId } from '../domain/ids';
import { parseCustomerScopes, SCOPES } from '../domain/scopes';
import { findAgent, insertAgent, publishAgentDraft, setAgentStatus as writeAgentStatus, updateAgentDraft as writeAgentDraft } from '../db/agents';
import { insertKey, revokeKey as writeRevocation } from '../db/apiKeys';
import { findPartner, insertPartner } from '../db/partners';
import { creditWorkspace as addCredits, findWorkspace, insertWorkspace } from '../db/workspaces';
import { parseAgentConfig } from '../contract/agentConfig';
import { ROLES, SETUP_TTL_MS, isRole, secretToken, tokenHash } from '../domain/members';
import { insertMember, revokeMember as writeMemberRevocation } from '../db/members';
import { deleteSecret as removeSecret, listSecrets as workspaceSecrets, putSecret } from '../db/workspaceSecrets';
import { isSecretName, isSecretOrigin, isSecretValue, SECRET_NAME_MESSAGE, SECRET_ORIGIN_MESSAGE, SECRET_VALUE_MESSAGE } from '../domain/secrets';
import { revokeAccount } from '../db/oauthModels';
import { transaction } from '../db/sql';
import { config } from '../infra/config';
import { announceKey } from '../callers/liveKeyFilter';

/** A refusal the CLI prints as an error object and exits non-zero on. */
export class AdminError extends Error {}

async function found<T>(record: Promise<T | undefined>, kind: string, publicId: string): Promise<T> {
  const value = await record;
  if (value === undefined) throw new AdminError(`no ${kind} "${publicId}"`);
  return value;
}

const workspaceById = (id: string) => found(findWorkspace(id), 'workspace', id);
const partnerById = (id: string) => found(findPartner(id), 'partner', id);
const agentById = (id: string) => found(findAgent(id), 'agent', id);

function integer(value: string | number | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new AdminError(`--${name} must be an integer`);
  return n;
}

function status(value: string): AgentStatus {
  if (!(AGENT_STATUSES as readonly string[]).includes(value)) throw new AdminError(`--status must be one of ${AGENT_STATUSES.join(', ')}`);
  return value as AgentStatus;
}

export async function createWorkspace(o: { name: string; credits?: string | number; partner?: string; tenantRef?: string; usageThreshold?: string | number }) {
  if ((o.partner === undefined) !== (o.tenantRef === undefined)) throw new AdminError('--partner and --tenant-ref go together');
  const partner = o.partner ? await partnerById(o.partner) : null;
  const workspace = await insertWorkspace({
    publicId: mintId('workspace'),
    name: o.name,
    credits: integer(o.credits, 'credits') ?? 0,
    usageThreshold: integer(o.usageThreshold, 'usage-threshold') ?? null,
    partnerId: partner?.id ?? null,
    tenantRef: o.tenantRef ?? null,
  });
  return { id: workspace.publicId, name: workspace.name, credits: workspace.credits, partner: partner?.publicId ?? null, tenant_ref: workspace.tenantRef, usage_threshold: workspace.usageThreshold };
}

export async function creditWorkspace(o: { workspace: string; amount: string | number }) {
  const amount = integer(o.amount, 'amount');
  if (amount === undefined) throw new AdminError('--amount is required');
  const balance = await found(addCredits(o.workspace, amount), 'workspace', o.workspace);
  return { balance };
}

async function createKey(kind: KeyKind, owner: { workspaceId?: number; partnerId?: number }, o: { scopes: string; environment?: string; expiresAt?: string; name?: string }) {
  let scopes: string[];
  try {
    scopes = parseCustomerScopes(o.scopes.split(',').map((s) => s.trim()).filter(Boolean));
  } catch (err) {
    throw new AdminError((err as Error).message);
  }
  const environment = o.environment ?? 'live';
  if (environment !== 'live' && environment !== 'test') throw new AdminError('--environment must be live or test');
  const expiresAt = o.expiresAt === undefined ? null : new Date(o.expiresAt);
  if (expiresAt && Number.isNaN(expiresAt.getTime())) throw new AdminError('--expires-at must be an ISO 8601 timestamp');
  const key = generateApiKey(kind);
  const hash = hashApiKey(key);
  const publicId = mintId('key');
  const name = o.name ?? null;
  await insertKey({
    publicId,
    kind,
    workspaceId: owner.workspaceId ?? null,
    partnerId: owner.partnerId ?? null,
    name,
    environment,
    hash,
    hint: key.slice(-4),
    scopes,
    expiresAt,
  });
  // Every API instance admits it from an address that others' failures throttled (callers/liveKeyFilter.ts).
  await announceKey(hash);
  return { id: publicId, key, scopes, environment, expires_at: expiresAt?.toISOString() ?? null, name };
}

export async function createWorkspaceKey(o: { workspace: string; scopes: string; environment?: string; expiresAt?: string; name?: string }) {
  const workspace = await workspaceById(o.workspace);
  return { ...(await createKey('workspace', { workspaceId: workspace.id }, o)), workspace: workspace.publicId };
}

export async function createPartnerKey(o: { partner: string; scopes: string; expiresAt?: string; name?: string }) {
  const partner = await partnerById(o.partner);
  return { ...(await createKey('partner', { partnerId: partner.id }, o)), partner: partner.publicId };
}

export async function revokeKey(o: { id: string }) {
  const key = await found(writeRevocation(o.id), 'key', o.id);
  return { id: key.publicId, revoked_at: key.revokedAt.toISOString() };
}

export async function createPartner(o: { name: string; webhookRate?: string | number }) {
  const webhookRate = integer(o.webhookRate, 'webhook-rate') ?? null;
  if (webhookRate !== null && webhookRate < 1) throw new AdminError('--webhook-rate must be at least 1');
  const partner = await insertPartner({ publicId: mintId('partner'), name: o.name, webhookRate });
  return { id: partner.publicId, name: partner.name, webhook_rate: partner.webhookRate };
}

/** Creating an agent publishes its first configuration as version 1. */
export async function createAgent(o: { workspace: string; name: string; status?: string; config?: unknown }) {
  const workspace = await workspaceById(o.workspace);
  const config = parseAgentConfig(o.config);
  const agent = await insertAgent({ publicId: mintId('agent'), workspaceId: workspace.id, name: o.name, status: status(o.status ?? 'active'), config });
  return { id: agent.publicId, workspace: workspace.publicId, name: agent.name, status: agent.status, version: 1 };
}

/** Replaces the draft; runs keep using the published version until the next publish. */
export async function updateAgentDraft(o: { agent: string; config: unknown }) {
  const agent = await agentById(o.agent);
  const updated = await writeAgentDraft(agent.id, parseAgentConfig(o.config));
  return { id: updated.publicId, draft_version: updated.publishedVersion + 1 };
}

/** Snapshots the draft as the next integer version. */
export async function publishAgent(o: { agent: string }) {
  const agent = await agentById(o.agent);
  // Checked again: what the service allows (RUN_MODEL_CALLS_MAX) may have changed since the draft was saved.
  parseAgentConfig(agent.draftConfig);
  return { id: agent.publicId, version: await publishAgentDraft(agent.id) };
}

export async function setAgentStatus(o: { agent: string; status: string }) {
  const agent = await agentById(o.agent);
  const next = status(o.status);
  await writeAgentStatus(agent.id, next);
  return { id: agent.publicId, status: next };
}

/** A dashboard member; they choose their password at the printed link, once, within a day. */
export async function createMember(o: { workspace: string; email: string; role?: string }) {
  const workspace = await workspaceById(o.workspace);
  const role = o.role ?? 'owner';
  if (!isRole(role)) throw new AdminError(`--role must be one of ${ROLES.join(', ')}`);
  if (!/^[^\s@]+@[^\s@]+$/.test(o.email)) throw new AdminError('--email must be an email address');
  const setupToken = secretToken();
  const setupExpiresAt = new Date(Date.now() + SETUP_TTL_MS);
  const member = await insertMember({ publicId: mintId('member'), workspaceId: workspace.id, email: o.email, role, setupTokenHash: tokenHash(setupToken), setupExpiresAt });
  if (!member) throw new AdminError(`a member with the email ${o.email} already exists`);
  const setupUrl = new URL(`/dashboard/setup?token=${setupToken}`, config().publicBaseUrl).href;
  return { id: member.publicId, workspace: workspace.publicId, email: member.email, role: member.role, setup_url: setupUrl, setup_expires_at: setupExpiresAt.toISOString() };
}

/**
 * Revokes a member: their dashboard sessions end (the session lookup joins on revoked_at), and their
 * OAuth grants, codes and tokens are deleted with it (access tokens also check the member on use;
 * other API instances may honour one already resolved for up to CREDENTIAL_CACHE_MS).
 */
export async function revokeMember(o: { id: string }) {
  const { member, oauthRows } = await transaction(async (sql) => {
    const member = await found(writeMemberRevocation(o.id, sql), 'member', o.id);
    return { member, oauthRows: await revokeAccount(member.publicId, sql) };
  });
  return { id: member.publicId, revoked_at: member.revokedAt.toISOString(), oauth_rows_deleted: oauthRows };
}

/**
 * Sets a workspace secret (a credential agents' tools use, named in agent config by `credential`), or
 * replaces its value: sealed at rest, and never printed (DESIGN.md §3: `{"name":"NAME"}` only).
 */
export async function setSecret(o: { workspace: string; name: string; value: string; origin?: string }) {
  const workspace = await workspaceById(o.workspace);
  if (!isSecretName(o.name)) throw new AdminError(`--${SECRET_NAME_MESSAGE}`);
  if (!isSecretValue(o.value)) throw new AdminError(`--${SECRET_VALUE_MESSAGE}`);
  if (o.origin !== undefined && !isSecretOrigin(o.origin)) throw new AdminError(`--${SECRET_ORIGIN_MESSAGE}`);
  await putSecret(workspace.id, o.name, o.value, o.origin);
  return { name: o.name };
}

/** The workspace's secrets by name, with their times; never a value. */
export async function listSecrets(o: { workspace: string }) {
  const workspace = await workspaceById(o.workspace);
  const secrets = await workspaceSecrets(workspace.id);
  return { workspace: workspace.publicId, secrets: secrets.map((s) => ({ name: s.name, origin: s.origin, created_at: s.created_at.toISOString(), updated_at: s.updated_at.toISOString() })) };
}

export async function deleteSecret(o: { workspace: string; name: string }) {
  const workspace = await workspaceById(o.workspace);
  if (!(await removeSecret(workspace.id, o.name))) throw new AdminError(`no secret "${o.name}" in workspace "${workspace.publicId}"`);
  return { name: o.name, deleted: true };
}

/** The whole scope registry (DESIGN.md §3), `ops:` ones included, so clients can grant scopes without guessing names. */
export function listScopes() {
  return { scopes: [...SCOPES] };
}
