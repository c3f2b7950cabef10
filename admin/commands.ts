import { Transaction } from 'sequelize';
import { AGENT_STATUSES, type AgentStatus } from '../domain/agents';
import { generateApiKey, hashApiKey, type KeyKind } from '../domain/apiKeys';
import { mintId } from '../domain/ids';
import { parseCustomerScopes } from '../domain/scopes';
import { Agent, AgentVersion, ApiKey, models, Partner, Workspace } from '../db/models';
import { db } from '../db/sequelize';
import { parseAgentConfig } from '../api/validation/agentConfig';

/** A refusal the CLI prints as an error object and exits non-zero on. */
export class AdminError extends Error {}

async function byPublicId<M extends { id: number }>(finder: (publicId: string) => Promise<M | null>, kind: string, publicId: string): Promise<M> {
  const found = await finder(publicId);
  if (!found) throw new AdminError(`no ${kind} "${publicId}"`);
  return found;
}

const workspaceById = (id: string) => byPublicId((p) => Workspace.findOne({ where: { publicId: p } }), 'workspace', id);
const partnerById = (id: string) => byPublicId((p) => Partner.findOne({ where: { publicId: p } }), 'partner', id);
const agentById = (id: string) => byPublicId((p) => Agent.findOne({ where: { publicId: p } }), 'agent', id);

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
  models();
  if ((o.partner === undefined) !== (o.tenantRef === undefined)) throw new AdminError('--partner and --tenant-ref go together');
  const partner = o.partner ? await partnerById(o.partner) : null;
  const workspace = await Workspace.create({
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
  models();
  const amount = integer(o.amount, 'amount');
  if (amount === undefined) throw new AdminError('--amount is required');
  const workspace = await workspaceById(o.workspace);
  await workspace.increment('credits', { by: amount });
  await workspace.reload();
  return { balance: workspace.credits };
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
  const row = await ApiKey.create({
    publicId: mintId('key'),
    kind,
    workspaceId: owner.workspaceId ?? null,
    partnerId: owner.partnerId ?? null,
    name: o.name ?? null,
    environment,
    keyHash: hashApiKey(key),
    keyHint: key.slice(-4),
    scopes,
    expiresAt,
  });
  return { id: row.publicId, key, scopes, environment, expires_at: expiresAt?.toISOString() ?? null, name: row.name };
}

export async function createWorkspaceKey(o: { workspace: string; scopes: string; environment?: string; expiresAt?: string; name?: string }) {
  models();
  const workspace = await workspaceById(o.workspace);
  return { ...(await createKey('workspace', { workspaceId: workspace.id }, o)), workspace: workspace.publicId };
}

export async function createPartnerKey(o: { partner: string; scopes: string; expiresAt?: string; name?: string }) {
  models();
  const partner = await partnerById(o.partner);
  return { ...(await createKey('partner', { partnerId: partner.id }, o)), partner: partner.publicId };
}

export async function revokeKey(o: { id: string }) {
  models();
  const key = await byPublicId((p) => ApiKey.findOne({ where: { publicId: p } }), 'key', o.id);
  if (!key.revokedAt) await key.update({ revokedAt: new Date() });
  return { id: key.publicId, revoked_at: key.revokedAt!.toISOString() };
}

export async function createPartner(o: { name: string }) {
  models();
  const partner = await Partner.create({ publicId: mintId('partner'), name: o.name });
  return { id: partner.publicId, name: partner.name };
}

/** Creating an agent publishes its first configuration as version 1. */
export async function createAgent(o: { workspace: string; name: string; status?: string; config?: unknown }) {
  models();
  const workspace = await workspaceById(o.workspace);
  const config = parseAgentConfig(o.config);
  const agent = await db().transaction(async (t) => {
    const created = await Agent.create(
      { publicId: mintId('agent'), workspaceId: workspace.id, name: o.name, status: status(o.status ?? 'active'), draftConfig: config, publishedVersion: 1 },
      { transaction: t },
    );
    await AgentVersion.create({ agentId: created.id, version: 1, config }, { transaction: t });
    return created;
  });
  return { id: agent.publicId, workspace: workspace.publicId, name: agent.name, status: agent.status, version: 1 };
}

/** Replaces the draft; runs keep using the published version until the next publish. */
export async function updateAgentDraft(o: { agent: string; config: unknown }) {
  models();
  const agent = await agentById(o.agent);
  await agent.update({ draftConfig: parseAgentConfig(o.config), draftChanged: true });
  return { id: agent.publicId, draft_version: agent.publishedVersion + 1 };
}

/** Snapshots the draft as the next integer version. */
export async function publishAgent(o: { agent: string }) {
  models();
  const agent = await agentById(o.agent);
  const version = await db().transaction({ isolationLevel: Transaction.ISOLATION_LEVELS.SERIALIZABLE }, async (t) => {
    await agent.reload({ transaction: t, lock: t.LOCK.UPDATE });
    const next = agent.publishedVersion + 1;
    await AgentVersion.create({ agentId: agent.id, version: next, config: agent.draftConfig }, { transaction: t });
    await agent.update({ publishedVersion: next, draftChanged: false }, { transaction: t });
    return next;
  });
  return { id: agent.publicId, version };
}

export async function setAgentStatus(o: { agent: string; status: string }) {
  models();
  const agent = await agentById(o.agent);
  await agent.update({ status: status(o.status) });
  return { id: agent.publicId, status: agent.status };
}
