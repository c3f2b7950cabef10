import { firstOpenTurn, openTurnsBefore } from '../db/creditReservations';
import type { TurnRef } from '../domain/turns';
import { logger } from '../infra/logger';
import { temporal } from '../infra/temporalClient';
import { wakeTurn } from '../workflowClients/agentRun.client';

/** Whether every earlier turn of the conversation has ended (settled, or given back by the reconciler). */
export async function turnIsNext(turn: TurnRef): Promise<boolean> {
  return (await openTurnsBefore(turn.conversationId, turn.number)).length === 0;
}

/**
 * A turn of the conversation ended: tells the oldest open turn, which may be queued. Best effort:
 * a queued turn also looks on its own every TURN_RECHECK_MS.
 */
export async function wakeNextTurn(conversationId: number): Promise<void> {
  try {
    const next = await firstOpenTurn(conversationId);
    if (next) await wakeTurn(await temporal(), next);
  } catch (err) {
    logger.warn({ err: String(err), conversation_id: conversationId }, 'next turn not woken; it looks again on its own');
  }
}
