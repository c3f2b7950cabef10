import type { AgentConfig, AgentStatus } from '../domain/agents';
import { sql, statement, transaction, type Sql } from './sql';
import { pageStart } from './paging';

export interface AgentRecord {
  id: number;
  publicId: string;
  workspaceId: number;
  name: string;
  status: AgentStatus;
  draftConfig: AgentConfig;
  draftChanged: boolean;
  publishedVersion: number;
}

const COLUMNS = `id, public_id AS "publicId", workspace_id AS "workspaceId", name, status, draft_config AS "draftConfig",
  draft_changed AS "draftChanged", published_version AS "publishedVersion"`;

/** An agent about to run, with its published configuration. */
export interface RunnableAgent {
  id: number;
  publicId: string;
  name: string;
  status: AgentStatus;
  publishedVersion: number;
  draftChanged: boolean;
  draftConfig: AgentConfig;
  publishedConfig: AgentConfig | null;
}

/** Everything an execution checks of the agent, in one round trip (the hot path). */
const RUNNABLE = statement(
  `SELECT a.id, a.public_id AS "publicId", a.name, a.status, a.published_version AS "publishedVersion", a.draft_changed AS "draftChanged",
          a.draft_config AS "draftConfig", v.config AS "publishedConfig"
     FROM agents a
     LEFT JOIN agent_versions v ON v.agent_id = a.id AND v.version = a.published_version
    WHERE a.public_id = $1 AND a.workspace_id = $2`,
);

/** The agent in this workspace (another workspace's agent is as absent as a missing one). */
export async function findRunnableAgent(workspaceId: number, publicId: string, on: Sql = sql): Promise<RunnableAgent | undefined> {
  const [row] = await on.rows<RunnableAgent>(RUNNABLE, [publicId, workspaceId]);
  return row;
}

const BY_PUBLIC_ID = statement(`SELECT ${COLUMNS} FROM agents WHERE public_id = $1`);
const IN_WORKSPACE = statement(`SELECT ${COLUMNS} FROM agents WHERE public_id = $1 AND workspace_id = $2`);

/** Any workspace's agent: for the operator's admin CLI only. */
export async function findAgent(publicId: string, on: Sql = sql): Promise<AgentRecord | undefined> {
  const [row] = await on.rows<AgentRecord>(BY_PUBLIC_ID, [publicId]);
  return row;
}

export async function findAgentInWorkspace(workspaceId: number, publicId: string, on: Sql = sql): Promise<AgentRecord | undefined> {
  const [row] = await on.rows<AgentRecord>(IN_WORKSPACE, [publicId, workspaceId]);
  return row;
}

const INSERT = statement(
  `INSERT INTO agents (public_id, workspace_id, name, status, draft_config, published_version) VALUES ($1, $2, $3, $4, $5, 1) RETURNING ${COLUMNS}`,
);
const INSERT_VERSION = statement('INSERT INTO agent_versions (agent_id, version, config) VALUES ($1, $2, $3)');

/** A new agent whose configuration is published at once as version 1. */
export function insertAgent(a: { publicId: string; workspaceId: number; name: string; status: AgentStatus; config: AgentConfig }): Promise<AgentRecord> {
  return transaction(async (tx) => {
    const [agent] = await tx.rows<AgentRecord>(INSERT, [a.publicId, a.workspaceId, a.name, a.status, JSON.stringify(a.config)]);
    await tx.rows(INSERT_VERSION, [agent.id, 1, JSON.stringify(a.config)]);
    return agent;
  });
}

const INSERT_BUILTIN = statement(
  `INSERT INTO agents (public_id, workspace_id, name, status, draft_config, published_version, builtin) VALUES ($1, $2, $3, 'active', $4, 1, $5)
   ON CONFLICT (workspace_id, builtin) WHERE builtin IS NOT NULL DO NOTHING
   RETURNING id`,
);
const BUILTIN = statement('SELECT public_id AS "publicId" FROM agents WHERE workspace_id = $1 AND builtin = $2');

/**
 * The workspace's built-in agent of this kind (the extraction agent a request that names none uses),
 * created with its configuration published on first use; its public id.
 */
export function builtinAgent(b: { workspaceId: number; builtin: string; name: string; config: AgentConfig; mintPublicId: () => string }): Promise<string> {
  return transaction(async (tx) => {
    const [created] = await tx.rows<{ id: number }>(INSERT_BUILTIN, [b.mintPublicId(), b.workspaceId, b.name, JSON.stringify(b.config), b.builtin]);
    if (created) await tx.rows(INSERT_VERSION, [created.id, 1, JSON.stringify(b.config)]);
    const [agent] = await tx.rows<{ publicId: string }>(BUILTIN, [b.workspaceId, b.builtin]);
    return agent.publicId;
  });
}

const UPDATE_DRAFT = statement(`UPDATE agents SET draft_config = $2, draft_changed = true, updated_at = now() WHERE id = $1 RETURNING ${COLUMNS}`);

export async function updateAgentDraft(id: number, config: AgentConfig, on: Sql = sql): Promise<AgentRecord> {
  const [row] = await on.rows<AgentRecord>(UPDATE_DRAFT, [id, JSON.stringify(config)]);
  return row;
}

const LOCK = statement(`SELECT ${COLUMNS} FROM agents WHERE id = $1 FOR UPDATE`);
const PUBLISHED = statement('UPDATE agents SET published_version = $2, draft_changed = false, updated_at = now() WHERE id = $1');

/** Snapshots the draft as the next integer version; concurrent publishes are serialised by the row lock. */
export function publishAgentDraft(id: number): Promise<number> {
  return transaction(async (tx) => {
    const [agent] = await tx.rows<AgentRecord>(LOCK, [id]);
    const next = agent.publishedVersion + 1;
    await tx.rows(INSERT_VERSION, [id, next, JSON.stringify(agent.draftConfig)]);
    await tx.rows(PUBLISHED, [id, next]);
    return next;
  });
}

const SET_STATUS = statement('UPDATE agents SET status = $2, updated_at = now() WHERE id = $1');

export async function setAgentStatus(id: number, status: AgentStatus, on: Sql = sql): Promise<void> {
  await on.rows(SET_STATUS, [id, status]);
}

const OF_WORKSPACE = statement(`SELECT ${COLUMNS} FROM agents WHERE workspace_id = $1 AND builtin IS NULL ORDER BY id DESC LIMIT 200`);

/** The workspace's own agents (built-in ones aside), newest first. */
export function workspaceAgents(workspaceId: number, on: Sql = sql): Promise<AgentRecord[]> {
  return on.rows<AgentRecord>(OF_WORKSPACE, [workspaceId]);
}

const VERSIONS = statement('SELECT version, created_at AS "createdAt" FROM agent_versions WHERE agent_id = $1 ORDER BY version DESC');

export function agentVersions(agentId: number, on: Sql = sql): Promise<{ version: number; createdAt: Date }[]> {
  return on.rows(VERSIONS, [agentId]);
}

/** An agent as GET /api/v2/agents lists it: never its configuration (instructions are the workspace's own). */
export interface AgentListing {
  public_id: string;
  name: string;
  status: AgentStatus;
  published_version: number;
  draft_changed: boolean;
  created_at: Date;
  updated_at: Date;
}

const AGENT_ANCHOR = statement('SELECT id FROM agents WHERE public_id = $1 AND workspace_id = $2 AND builtin IS NULL');
const AGENT_PAGE = statement(
  `SELECT public_id, name, status, published_version, draft_changed, created_at, updated_at
     FROM agents
    WHERE workspace_id = $1 AND id < $2 AND builtin IS NULL
    ORDER BY id DESC
    LIMIT $3`,
);

/** Up to `limit` of the workspace's own agents, newest first, after `after` (undefined: not the workspace's). */
export async function agentPage(workspaceId: number, after: string | undefined, limit: number, on: Sql = sql): Promise<AgentListing[] | undefined> {
  const before = await pageStart(AGENT_ANCHOR, workspaceId, after, on);
  return before === undefined ? undefined : on.rows<AgentListing>(AGENT_PAGE, [workspaceId, before, limit]);
}

/** An agent the `/v1` surface lists as a model: active, so a run may use it. */
export interface ModelListing {
  public_id: string;
  name: string;
  created_at: Date;
}

const ACTIVE_AGENTS = statement(
  `SELECT public_id, name, created_at FROM agents WHERE workspace_id = $1 AND status = 'active' AND builtin IS NULL ORDER BY id DESC LIMIT 1000`,
);

/** The workspace's active agents, newest first (at most 1,000: OpenAI's model list has no pages). */
export function activeAgents(workspaceId: number, on: Sql = sql): Promise<ModelListing[]> {
  return on.rows<ModelListing>(ACTIVE_AGENTS, [workspaceId]);
}

const NAMED = statement(`SELECT public_id FROM agents WHERE workspace_id = $1 AND name = $2 AND builtin IS NULL LIMIT 2`);

/** The agent of this name, when the workspace has exactly one (an OpenAI client names its model so). */
export async function agentNamed(workspaceId: number, name: string, on: Sql = sql): Promise<string | undefined> {
  const rows = await on.rows<{ public_id: string }>(NAMED, [workspaceId, name]);
  return rows.length === 1 ? rows[0].public_id : undefined;
}
