import type { MetricMeter } from '@temporalio/common';
import { answeredBy, modelRoute, type ModelRef } from '../../domain/modelRoutes';
import { modelProviders } from '.';
import { admit, answered, failed, released, type Admission } from './health';
import { providerMetrics } from './metrics';
import { takeSlot } from './pacing';
import { pause } from './waiting';
import { ProviderError, type ModelReply, type ModelRequest, type ProviderErrorClass } from './types';

/**
 * What the run's timeline shows of how a call was routed: the models passed over before the one that
 * answered, each with why (its failure's class: rate_limited, server, timeout, connection; or the
 * state it was in: cooldown, circuit), and each wait for a provider (why: cooldown, circuit, or
 * `limit`, a slot of its max_concurrency or rpm), with their total.
 */
export interface RouteNote {
  passed?: { model: string; why: string }[];
  waits?: { provider: string; why: string; ms: number }[];
  waitedMs?: number;
}

export interface RoutedReply {
  reply: ModelReply;
  /** The model that answered, as the run's log, timeline and usage name it (`b/stub-model` once providers are declared). */
  model: string;
  route?: RouteNote;
}

/** Failures that say the provider, not the request, is the trouble: these go to a fallback model (never a 4xx, never a refusal). */
const FALLS_BACK: ReadonlySet<ProviderErrorClass> = new Set(['rate_limited', 'server', 'timeout', 'connection']);

function classOf(err: ProviderError): ProviderErrorClass {
  return err.errorClass ?? 'other';
}

/** A probe or cooldown is looked at again at least this often while a call waits (another worker's probe may answer sooner). */
const WAIT_LOOK_MS = 250;
/** A `Retry-After: 0` still pauses this call briefly, so it never asks again in a tight loop. */
const MIN_PAUSE_MS = 200;

/**
 * One model call, routed (docs/operations.md, "Model providers"): to the agent's model, and when its
 * provider is cooling down, has its circuit open or fails with a 429, 5xx, timeout or refused
 * connection, to its fallback models in order. A provider with `max_concurrency` or `rpm` is called
 * only with a slot of it (activities/providers/pacing.ts), waited for in the workspace's turn (`share`
 * names it): a limit is waited for, not a reason to fall back. When none can be called now, the call
 * waits (sending nothing) for the first to come back, until the run's deadline; one that cannot come
 * back before it fails the run provider_unavailable, with nothing sent and so nothing charged. A call
 * that has streamed text is never restarted on another model here: its failure goes to the activity's
 * retry, whose next attempt tells the stream (`reset`). When every model has failed this attempt, the
 * last failure goes to the retry policy, as a single provider's did before.
 */
export async function routedComplete(
  meter: MetricMeter,
  names: { model: string; fallbacks?: string[] },
  request: ModelRequest,
  o: { deadlineAt: number; streamed: () => boolean; share: () => Promise<string> },
): Promise<RoutedReply> {
  const { byName, names: providerNames } = modelProviders();
  const route = modelRoute(names.model, names.fallbacks, providerNames);
  const display = (r: ModelRef) => `${r.provider}/${r.model}`;
  const signal = request.signal ?? new AbortController().signal;
  const failedHere = new Set<number>();
  /** When a provider that asked this call for a pause may be asked again: honoured even when Redis, which shares it, cannot be reached. */
  const pausedUntil = new Map<number, number>();
  const passed: { model: string; why: string }[] = [];
  const pass = (ref: ModelRef, why: string) => passed.some((p) => p.model === display(ref)) || passed.push({ model: display(ref), why });
  const waits: { provider: string; why: string; ms: number }[] = [];
  /** A wait for `provider` begins: counted (the metric of calls waiting) until the returned end, and noted for the timeline, by provider and why. */
  const waiting = (provider: string, why: string) => {
    const since = Date.now();
    providerMetrics.waiting(meter, provider, 1);
    return () => {
      providerMetrics.waiting(meter, provider, -1);
      const ms = Date.now() - since;
      const same = waits.find((w) => w.provider === provider && w.why === why);
      if (same) same.ms += ms;
      else waits.push({ provider, why, ms });
    };
  };
  let lastError: ProviderError | undefined;
  for (;;) {
    let soonest: { waitMs: number; ref: ModelRef; why: string } | undefined;
    for (const [i, ref] of route.entries()) {
      if (failedHere.has(i)) continue;
      const named = byName.get(ref.provider)!;
      const paused = (pausedUntil.get(i) ?? 0) - Date.now();
      if (paused > 0) {
        providerMetrics.state(meter, ref.provider, 'cooldown');
        if (!soonest || paused < soonest.waitMs) soonest = { waitMs: paused, ref, why: 'cooldown' };
        pass(ref, 'cooldown');
        continue;
      }
      // The slot first, then the provider's health: a call that waited for a slot must not be sent into a cooldown another call's 429 began meanwhile.
      const slot = await takeSlot(ref.provider, named.limits, o.share, signal, () => waiting(ref.provider, 'limit'));
      try {
        const admission = await admit(ref.provider);
        providerMetrics.state(meter, ref.provider, admission.state);
        if (!admission.go) {
          // A probe in flight elsewhere may answer at any moment: look again soon.
          const waitMs = admission.probing ? Math.min(admission.waitMs, WAIT_LOOK_MS) : admission.waitMs;
          if (!soonest || waitMs < soonest.waitMs) soonest = { waitMs, ref, why: admission.state };
          pass(ref, admission.state);
          continue;
        }
        const outcome = await attempt(meter, named.provider, ref, admission, named.circuit, { ...request, model: ref.model });
        if ('reply' in outcome) {
          if (i > 0) providerMetrics.fellBack(meter, route[0].provider, ref.provider);
          const others = passed.filter((p) => p.model !== display(ref));
          const waitedMs = waits.reduce((n, w) => n + w.ms, 0);
          const note: RouteNote = { ...(others.length > 0 && { passed: others }), ...(waitedMs > 0 && { waits, waitedMs }) };
          return { reply: outcome.reply, model: answeredBy(ref.provider, outcome.reply.model, providerNames), ...(Object.keys(note).length > 0 && { route: note }) };
        }
        const err = outcome.error;
        if (!(err instanceof ProviderError) || !FALLS_BACK.has(classOf(err)) || o.streamed()) throw err;
        lastError = err;
        pass(ref, classOf(err));
        // A provider that asked for a pause is waited for (or passed over) like any cooling one; any other failure is this attempt's last word on it.
        if (err.retryAfterMs === undefined) failedHere.add(i);
        else pausedUntil.set(i, Date.now() + Math.max(err.retryAfterMs, MIN_PAUSE_MS));
      } finally {
        await slot.release();
      }
    }
    // Every model failed this attempt: the retry policy decides, as it did for one provider.
    if (route.every((_, i) => failedHere.has(i))) throw lastError ?? new ProviderError('no model provider could be called', true);
    if (!soonest) continue;
    if (Date.now() + soonest.waitMs >= o.deadlineAt) {
      throw new ProviderError(`provider ${soonest.ref.provider} is cooling down (it asked for a pause, or failed repeatedly) until after the run's deadline; nothing was sent`, false, undefined, 'rate_limited');
    }
    const waited = waiting(soonest.ref.provider, soonest.why);
    try {
      await pause(soonest.waitMs, signal);
    } finally {
      waited();
    }
  }
}

/** One call to one provider, with what it tells of the provider's health recorded for every worker. */
async function attempt(
  meter: MetricMeter,
  provider: { complete(r: ModelRequest): Promise<ModelReply> },
  ref: ModelRef,
  admission: Admission & { go: true },
  circuit: boolean,
  request: ModelRequest,
): Promise<{ reply: ModelReply } | { error: unknown }> {
  try {
    const reply = await provider.complete(request);
    providerMetrics.called(meter, ref.provider, 'ok');
    await answered(ref.provider, admission);
    return { reply };
  } catch (error) {
    if (!(error instanceof ProviderError) || request.signal?.aborted) {
      await released(ref.provider, admission);
      return { error };
    }
    const errorClass = classOf(error);
    providerMetrics.called(meter, ref.provider, errorClass);
    // A 4xx is an answer: the provider is up, the request was wrong.
    if (errorClass === 'client') await answered(ref.provider, admission);
    else {
      const entered = await failed(ref.provider, { retryAfterMs: error.retryAfterMs, counts: FALLS_BACK.has(errorClass), circuit, probe: admission.probe });
      if (entered) providerMetrics.entered(meter, ref.provider, entered);
    }
    return { error };
  }
}
