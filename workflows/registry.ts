import { defineSearchAttributeKey } from '@temporalio/common';

/** Task queues (DESIGN.md §1): each kind of work scales with its own workers. */
export const TASK_QUEUES = ['agent-runs', 'background', 'webhooks'] as const;
export type TaskQueue = (typeof TASK_QUEUES)[number];

/**
 * Search attributes every workflow carries, so an operator can filter the Temporal UI by workspace,
 * agent and kind. The start command registers them on the dev server.
 */
export const SEARCH_ATTRIBUTES = {
  workspaceId: defineSearchAttributeKey('WorkspaceId', 'KEYWORD'),
  agentId: defineSearchAttributeKey('AgentId', 'KEYWORD'),
  kind: defineSearchAttributeKey('Kind', 'KEYWORD'),
} as const;
