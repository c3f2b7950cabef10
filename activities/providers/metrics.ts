import type { MetricMeter } from '@temporalio/common';
import type { ProviderState } from './health';
import type { ProviderErrorClass } from './types';

/**
 * Each model provider's metrics, on the worker's own endpoint (WORKER_METRICS_PORT) with its others:
 * labelled by provider name only (the operator's few), never by model or run.
 */
export const providerMetrics = {
  /** A call sent to the provider, and how it ended: `ok`, or its error class. */
  called(meter: MetricMeter, provider: string, outcome: 'ok' | ProviderErrorClass): void {
    meter.createCounter('aes_model_provider_calls', 'calls', 'Model calls sent to a provider, by provider and outcome (ok, or the error class: rate_limited, server, timeout, connection, client, other).').add(1, { provider, outcome });
  },
  /** The provider as this worker last found it: 0 ok, 1 cooling down (Retry-After), 2 circuit open. */
  state(meter: MetricMeter, provider: string, state: ProviderState): void {
    meter.createGauge('aes_model_provider_state', 'int', 'state', 'A model provider as this worker last found it: 0 ok, 1 cooling down (Retry-After), 2 circuit open.').set(state === 'ok' ? 0 : state === 'cooldown' ? 1 : 2, { provider });
  },
  /** A cooldown or circuit this worker's failure started (each also logged once). */
  entered(meter: MetricMeter, provider: string, state: ProviderState): void {
    meter.createCounter('aes_model_provider_cooldowns', 'cooldowns', 'Cooldowns (Retry-After) and open circuits a model provider entered, by provider and kind (cooldown, circuit).').add(1, { provider, kind: state });
  },
  /** A call answered by a fallback model's provider rather than the agent's own. */
  fellBack(meter: MetricMeter, from: string, to: string): void {
    meter.createCounter('aes_model_provider_fallbacks', 'calls', 'Model calls answered by a fallback model, by the provider first asked (from) and the one that answered (to).').add(1, { from, to });
  },
  /** Calls of this worker waiting for a provider's cooldown or circuit to end, or for one of its slots (max_concurrency, rpm), now. */
  waiting(meter: MetricMeter, provider: string, change: 1 | -1): void {
    const now = (waitingNow.get(provider) ?? 0) + change;
    waitingNow.set(provider, now);
    meter.createGauge('aes_model_provider_calls_waiting', 'int', 'calls', 'Model calls of this worker waiting for a provider to come out of its cooldown or circuit, or for one of its slots (max_concurrency, rpm), by provider.').set(now, { provider });
  },
};

const waitingNow = new Map<string, number>();
