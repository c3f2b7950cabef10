import { setTimeout as delay } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import { claimDelivery, fanOutEvents, staleClaims, unstartedDeliveries, type DeliveryToStart } from '../db/webhookDeliveries';
import { config } from '../infra/config';
import { temporal } from '../infra/temporalClient';
import { DISPATCH_HEARTBEAT_INTERVAL_MS, DISPATCH_IDLE_POLL_MS } from '../domain/timings';
import { pacedHeartbeat } from './bounded';
import { startDelivery } from '../workflowClients/webhookDelivery.client';

/** Events fanned out, and delivery workflows started, per step. */
const BATCH = 500;
/** Workflow starts in flight at once. */
const START_CONCURRENCY = 32;
/** A claim this old with no attempt made: its start may have been lost (a crash, a failed start), so it is made again. */
const CLAIM_STALE_S = 60;

/**
 * Claims each delivery in the database for this namespace, then starts its workflow (idempotent: one
 * workflow id per delivery generation), numbering attempts on from its last. The claim comes first:
 * Temporal's workflow-id uniqueness holds within one namespace, and two deployments on one database
 * (blue/green, a move between clusters) must not both send a delivery.
 */
async function startDeliveries(deliveries: DeliveryToStart[], heartbeat: () => void): Promise<void> {
  const client = await temporal();
  const { retryDelaysMs } = config().webhooks;
  const namespace = config().temporalNamespace;
  for (let i = 0; i < deliveries.length; i += START_CONCURRENCY) {
    heartbeat();
    const slice = deliveries.slice(i, i + START_CONCURRENCY);
    const started = await Promise.allSettled(
      slice.map(async (d) => {
        if (!(await claimDelivery(d, namespace))) return;
        await startDelivery(client, { deliveryId: d.publicId, generation: d.generation, workspacePublicId: d.workspacePublicId, firstAttempt: d.attempts + 1, retryDelaysMs });
      }),
    );
    const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }
}

let stopping = false;

/**
 * A worker shutting down ends its dispatcher pass at once, so the next pass goes to a worker that
 * stays; workers started again in the same process (tests) dispatch again.
 */
export function dispatching(on: boolean): void {
  stopping = !on;
}

/**
 * One pass of the dispatcher, `passMs` long: outbox events become deliveries (one transaction per
 * batch, marking them dispatched), and deliveries whose workflow is not started yet get one, merchants
 * taking turns; it looks again every DISPATCH_IDLE_POLL_MS, or at once while batches come back full.
 * A delivery recorded but not started (a crash between the two) is started by the next pass, and one
 * claimed but not started by a pass a minute on, so nothing acknowledged in the outbox is lost.
 */
export async function dispatchOutbox(passMs: number): Promise<void> {
  const ctx = Context.current();
  const heartbeat = pacedHeartbeat(ctx, DISPATCH_HEARTBEAT_INTERVAL_MS);
  const until = Date.now() + passMs;
  while (Date.now() < until && !stopping && !ctx.cancellationSignal.aborted) {
    heartbeat();
    const events = await fanOutEvents(BATCH);
    const deliveries = await unstartedDeliveries(BATCH);
    await startDeliveries([...deliveries, ...(await staleClaims(config().temporalNamespace, CLAIM_STALE_S, BATCH))], heartbeat);
    // Straight on only while a backlog fills whole batches: under a steady trickle of runs, looping at
    // once would spend a transaction and a query on every few events (measured: 10 ms of worker CPU a run).
    if (events < BATCH && deliveries.length < BATCH) await delay(DISPATCH_IDLE_POLL_MS);
  }
}
