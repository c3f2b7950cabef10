/**
 * What a call that waits for people waits for (docs/api.md, "Actions"): a person's decision, or the
 * caller's output. Beside neither the actions nor the run's answer, so both take it.
 */
export const ACTION_TYPES = ['approval', 'client_tool'] as const;
export type ActionType = (typeof ACTION_TYPES)[number];
