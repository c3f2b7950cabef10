import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import { createApp } from '../../api/app';
import * as admin from '../../admin/commands';
import { QueryTypes } from 'sequelize';
import { DEFAULT_WEBHOOK_API_VERSION } from '../../domain/events';
import { mintId, mintTraceId } from '../../domain/ids';
import { setClock } from '../../domain/clock';
import { findPartner } from '../../db/partners';
import { db } from '../../db/sequelize';
import { insertEndpoint } from '../../db/webhookEndpoints';
import type { RunInput } from '../../domain/runs';
import type { StubReply, RecordedRequest } from '../stack/stubProvider';

/** An in-process API on a free port, against the stack globalSetup started. */
export async function startApi(): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = await new Promise((resolve) => {
    const s = createApp().listen(0, '127.0.0.1', () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The API under test for one test file: started before its tests, closed with every pool after.
 * Read `api.url` inside tests, not at module load.
 */
export function useApi(): { readonly url: string } {
  let api: { url: string; close(): Promise<void> } | undefined;
  beforeAll(async () => {
    api = await startApi();
  });
  afterAll(async () => {
    await api?.close();
    await closeAll();
  });
  return {
    get url() {
      return api!.url;
    },
  };
}

/**
 * Polls until the probe yields a value; bounded, so a broken feature fails instead of hanging, and
 * generously (45 s unless told), so a loaded machine's slowness never does.
 */
export async function until<T>(probe: () => Promise<T | undefined>, what: string, seconds = 45): Promise<T> {
  for (const deadline = Date.now() + seconds * 1000; Date.now() < deadline; ) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`gave up waiting for ${what}`);
}

/**
 * Runs `fn` with the service's clock (domain/clock) moved back to the start of the current minute and
 * running on from there: requests counted by a rate limit's minute windows all fall in one window,
 * however slowly a loaded machine sends them.
 */
export async function inOneRateWindow<T>(fn: () => Promise<T>): Promise<T> {
  const shift = Date.now() % 60_000;
  setClock(() => Date.now() - shift);
  try {
    return await fn();
  } finally {
    setClock();
  }
}

/** Closes every pool this test file opened, so jest can exit cleanly. */
export async function closeAll(): Promise<void> {
  const [{ closeDb }, { closeRedis }, { closeTemporal }] = await Promise.all([import('../../db/sequelize'), import('../../infra/redis'), import('../../infra/temporalClient')]);
  await Promise.all([closeDb(), closeRedis(), closeTemporal()]);
}

export async function scriptModel(model: string, replies: StubReply[]): Promise<void> {
  const res = await fetch(`${process.env.STUB_URL}/_stub/script`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, replies }) });
  if (res.status !== 204) throw new Error(`stub script failed: ${res.status}`);
}

/** How many of the model's requests the stub holds now (replies scripted with `hold` or `together`). */
export async function heldRequests(model: string): Promise<number> {
  const res = await fetch(`${process.env.STUB_URL}/_stub/held?model=${encodeURIComponent(model)}`);
  return ((await res.json()) as { held: number }).held;
}

/** Waits until the stub holds `n` of the model's calls, each still waited on by its caller. */
export function callsHeld(model: string, n: number, what = `${n} calls held`): Promise<true> {
  return until(async () => ((await heldRequests(model)) === n ? true : undefined), what);
}

/** Answers every request of the model the stub holds now. */
export async function releaseHeld(model: string): Promise<void> {
  await fetch(`${process.env.STUB_URL}/_stub/release?model=${encodeURIComponent(model)}`, { method: 'POST' });
}

/** What the stub (the suite's, or one a test started at `stubUrl`) was sent for the model. */
export async function providerRequests(model: string, stubUrl = process.env.STUB_URL): Promise<RecordedRequest[]> {
  const res = await fetch(`${stubUrl}/_stub/requests?model=${encodeURIComponent(model)}`);
  return (await res.json()) as RecordedRequest[];
}

export interface Tenant {
  workspace: string;
  key: string;
  agent: string;
  /** The stub model name this tenant's agent uses: script it with scriptModel(). */
  model: string;
}

/**
 * A partner with an endpoint that enables no event type (so nothing is ever delivered): its
 * workspaces' changes write outbox events, which only such workspaces get (db/outbox.ts).
 */
export async function listeningPartner(): Promise<string> {
  const partner = await admin.createPartner({ name: 'listener' });
  const key = await admin.createPartnerKey({ partner: partner.id, scopes: 'webhooks:write' });
  const [{ keyId }] = await db().query<{ keyId: number }>('SELECT id AS "keyId" FROM api_keys WHERE public_id = :key', { replacements: { key: key.id }, type: QueryTypes.SELECT });
  const { id: partnerId } = (await findPartner(partner.id))!;
  const endpoint = {
    publicId: mintId('webhookEndpoint'),
    partnerId,
    url: 'http://127.0.0.1:9/unheard',
    description: '',
    apiVersion: DEFAULT_WEBHOOK_API_VERSION,
    enabledEvents: [],
    permittedEvents: [],
    createdByKey: keyId,
    secret: 'never-signs',
    secretHint: 'igns',
  };
  await insertEndpoint(endpoint, 1);
  return partner.id;
}

/**
 * A workspace with credits, a key with the given scopes and an active agent on a model of its own;
 * `listened`: the workspace of a partner with an endpoint, so its changes write outbox events.
 */
export async function tenant(options: { scopes?: string[]; credits?: number; agentStatus?: string; config?: Record<string, unknown>; listened?: boolean } = {}): Promise<Tenant> {
  const model = `stub-${randomUUID()}`;
  const partner = options.listened ? await listeningPartner() : undefined;
  const ws = await admin.createWorkspace({ name: 'test', credits: options.credits ?? 1_000_000, ...(partner && { partner, tenantRef: `ref-${randomUUID()}` }) });
  const key = await admin.createWorkspaceKey({ workspace: ws.id, scopes: (options.scopes ?? ['responses:create']).join(',') });
  const agent = await admin.createAgent({ workspace: ws.id, name: 'agent', status: options.agentStatus ?? 'active', config: { model, ...options.config } });
  return { workspace: ws.id, key: key.key, agent: agent.id, model };
}

export interface Answer {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/** One JSON request to the API under test. */
export async function call(url: string, method: string, path: string, options: { key?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  let payload: string | undefined = options.raw;
  if (options.body !== undefined) payload = JSON.stringify(options.body);
  if (payload !== undefined) headers['content-type'] ??= 'application/json';
  return answerOf(await fetch(url + path, { method, headers, body: payload }));
}

/** A response read whole: its text, and its body as JSON when it is JSON. */
export async function answerOf(res: Response): Promise<Answer> {
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.status, headers: res.headers, body, text };
}

/**
 * A run's input as the API would build it, for tests that start agentRun workflows themselves (on a
 * queue of their own, or on none): the tenant's workspace and agent, a text input, default options.
 */
export async function runInputFor(t: Tenant, overrides: Partial<Omit<RunInput, 'options'>> & { options?: Partial<RunInput['options']> } = {}): Promise<RunInput> {
  const [ids] = await db().query<{ workspace: number; agent: number }>(
    'SELECT w.id AS workspace, a.id AS agent FROM workspaces w JOIN agents a ON a.workspace_id = w.id WHERE a.public_id = :agent',
    { replacements: { agent: t.agent }, type: QueryTypes.SELECT },
  );
  const { options, ...rest } = overrides;
  return {
    runId: mintId('run'), kind: 'response', requestId: mintId('request'), traceId: mintTraceId(),
    workspace: { id: ids.workspace, publicId: t.workspace, tenantRef: null, partnerPublicId: null },
    agent: { id: ids.agent, publicId: t.agent, version: 1, config: { model: t.model } },
    input: 'hi', attachments: [], channel: 'api', metadata: {}, requestContext: {},
    acceptedAt: Date.now(),
    ...rest,
    options: { knowledgePolicy: 'auto', memoryPolicy: 'auto', toolPolicy: 'auto', preview: false, stream: false, timeoutMs: 60000, responseFormat: { type: 'text' }, ...options },
  };
}
