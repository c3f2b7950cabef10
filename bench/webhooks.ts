import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { createAgent, createPartner, createPartnerKey, createWorkspace, createWorkspaceKey } from '../admin/commands';
import { mintId, mintTraceId } from '../domain/ids';
import { Outbox } from '../db/outbox';
import { transaction } from '../db/sql';
import { findWorkspace } from '../db/workspaces';
import { percentiles, type Percentiles } from './load';
import { ok } from './jobs';
import type { Stack } from './stack';

/** Events written for the throughput phase, by this many concurrent writers (each event its own transaction, as a settlement writes it). */
export const DELIVERED_EVENTS = 2000;
const WRITERS = 32;

export interface WebhookFigures {
  deliveries: number;
  seconds: number;
  deliveries_per_s: number;
  /** From a run's settlement (its event's created_at, on the worker's clock) to its delivery's first attempt reaching the receiver. */
  settle_to_first_attempt_ms: Percentiles;
}

/** A partner's receiver on loopback: answers 204 at once, notes when each event first arrived. */
class Receiver {
  readonly arrived = new Map<string, { at: number; createdAt: string }>();
  private server: Server | undefined;
  private waiting: { n: number; resolve: () => void } | undefined;

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c)).on('end', () => {
        const at = Date.now();
        const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string; created_at: string };
        if (!this.arrived.has(event.id)) this.arrived.set(event.id, { at, createdAt: event.created_at });
        res.writeHead(204).end();
        if (this.waiting && this.arrived.size >= this.waiting.n) this.waiting.resolve();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Resolves when `n` distinct events have arrived; fails after `ms`. */
  until(n: number, ms: number): Promise<void> {
    if (this.arrived.size >= n) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${this.arrived.size} of ${n} webhook deliveries arrived within ${ms / 1000} s`)), ms);
      this.waiting = { n, resolve: () => (clearTimeout(timer), resolve()) };
    });
  }

  stop(): void {
    this.server?.closeAllConnections();
    this.server?.close();
  }
}

/**
 * Partner webhooks end to end, through the API, the outbox dispatcher and the delivery workflows of
 * the service worker: `runs` runs posted one by one, each delivered as agent.run.completed, give the
 * time from settlement to the first attempt; then DELIVERED_EVENTS outbox events written by 32
 * writers give delivery throughput. The partner's rate is set out of reach, so nothing is held back.
 */
export async function webhookFigures(s: Stack, runs: number): Promise<WebhookFigures> {
  const receiver = new Receiver();
  const url = await receiver.start();
  try {
    const partner = await createPartner({ name: 'bench-partner', webhookRate: 1_000_000 });
    const partnerKey = await createPartnerKey({ partner: partner.id, scopes: 'webhooks:write,webhooks:read,agents:read' });
    const merchant = await createWorkspace({ name: 'bench-merchant', credits: 1_000_000_000, partner: partner.id, tenantRef: 'bench-merchant' });
    const key = await createWorkspaceKey({ workspace: merchant.id, scopes: 'responses:create' });
    const agent = await createAgent({ workspace: merchant.id, name: 'bench', config: { model: 'bench', instructions: 'Answer briefly.' } });
    const partnerAuth = { authorization: `Bearer ${partnerKey.key}`, 'content-type': 'application/json' };
    await ok(await fetch(`${s.api}/api/v1/partner/webhooks/endpoints/`, { method: 'POST', headers: partnerAuth, body: JSON.stringify({ url: `${url}/hook`, enabled_events: ['agent.run.completed'] }) }), 'POST webhook endpoint', 201);

    const auth = { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' };
    for (let i = 0; i < runs; i++) {
      await ok(await fetch(`${s.api}/api/v2/responses`, { method: 'POST', headers: auth, body: JSON.stringify({ agent: agent.id, input: `Say hello. (${i})` }) }), 'POST /api/v2/responses');
      await receiver.until(i + 1, 30_000);
    }
    const latency = percentiles([...receiver.arrived.values()].map((a) => a.at - Date.parse(a.createdAt)));

    const ws = (await findWorkspace(merchant.id))!;
    const tenant = { id: ws.id, publicId: ws.publicId, tenantRef: ws.tenantRef, partnerPublicId: partner.id };
    let written = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: WRITERS }, async () => {
        while (written < DELIVERED_EVENTS) {
          written++;
          const outbox = new Outbox(tenant, { requestId: mintId('request'), traceId: mintTraceId() });
          outbox.add('agent.run.completed', { id: mintId('run'), status: 'completed' });
          await transaction((tx) => outbox.write(tx));
        }
      }),
    );
    await receiver.until(runs + DELIVERED_EVENTS, 600_000);
    const seconds = (performance.now() - started) / 1000;
    const round = (x: number) => Math.round(x * 100) / 100;
    return { deliveries: DELIVERED_EVENTS, seconds: round(seconds), deliveries_per_s: round(DELIVERED_EVENTS / seconds), settle_to_first_attempt_ms: latency };
  } finally {
    receiver.stop();
  }
}
