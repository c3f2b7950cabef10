import { defineSearchAttributeKey } from '@temporalio/common';

/**
 * Task queues (DESIGN.md §1): each kind of work scales with its own workers. Their names are written
 * here alone (test/house.test.ts): runs, background work (ingestions, reports, extractions, jobs, the
 * reconciler) and webhooks.
 */
export const QUEUES = { runs: 'agent-runs', background: 'background', webhooks: 'webhooks' } as const;
export type TaskQueue = (typeof QUEUES)[keyof typeof QUEUES];
export const TASK_QUEUES: readonly TaskQueue[] = Object.values(QUEUES);

/**
 * Search attributes every workflow carries, so an operator can filter the Temporal UI by workspace,
 * agent and kind. The start command registers them on the dev server.
 */
export const SEARCH_ATTRIBUTES = {
  workspaceId: defineSearchAttributeKey('WorkspaceId', 'KEYWORD'),
  agentId: defineSearchAttributeKey('AgentId', 'KEYWORD'),
  kind: defineSearchAttributeKey('Kind', 'KEYWORD'),
} as const;
