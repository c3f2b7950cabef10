import type { Usage } from './usage';

/** The ledger line a run bills to: its channel, or the conversation's when it stated none. */
export function ledgerLine(channel: string, conversationChannel: string | undefined): string {
  return channel || conversationChannel || 'api';
}

/** One credit per token: the service's unit of usage. */
export function creditsFor(usage: Usage): number {
  return usage.total_tokens;
}
