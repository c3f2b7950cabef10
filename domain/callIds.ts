import type { ToolCall, ToolTurn } from './tools';

/**
 * The calls of one reply, each with an id of its own on our side. A provider may give two calls one
 * id (or none): a call that waits for people is recorded, approved and run by its id, so two calls
 * sharing one would share one approval, and the second would run unseen once the first is approved.
 * An id already unique in the reply is kept; any other gets a new one (`<id>_<n>`), and the
 * provider's id goes with it (providerId), for the turns sent back to the provider (providerTurns).
 */
export function ownCallIds(calls: ToolCall[]): ToolCall[] {
  const given = new Map<string, number>();
  for (const call of calls) given.set(call.id, (given.get(call.id) ?? 0) + 1);
  const taken = new Set<string>();
  return calls.map((call) => {
    if (call.id && given.get(call.id) === 1) {
      taken.add(call.id);
      return call;
    }
    const base = call.id || 'call';
    let n = 1;
    while (given.has(`${base}_${n}`) || taken.has(`${base}_${n}`)) n++;
    taken.add(`${base}_${n}`);
    return { ...call, id: `${base}_${n}`, providerId: call.id };
  });
}

/** The tool rounds as the provider sent them: each call, and each result, under the provider's own id. */
export function providerTurns(turns: ToolTurn[]): ToolTurn[] {
  const providerIds = new Map<string, string>();
  return turns.map((turn) => {
    if (turn.role === 'tool') return { ...turn, tool_call_id: providerIds.get(turn.tool_call_id) ?? turn.tool_call_id };
    // Each round's results answer that round's calls: its ids are mapped afresh.
    providerIds.clear();
    return {
      ...turn,
      tool_calls: turn.tool_calls.map(({ providerId, ...call }) => {
        providerIds.set(call.id, providerId ?? call.id);
        return { ...call, id: providerId ?? call.id };
      }),
    };
  });
}
