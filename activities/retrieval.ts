import { ApplicationFailure } from '@temporalio/activity';
import { hasPrefix } from '../domain/ids';
import { MAX_PASSAGES, type Passage } from '../domain/knowledge';
import { collectionKeys, searchChunks } from '../db/knowledgeChunks';
import { collectionName } from '../db/knowledgeCollections';
import { heartbeating } from './bounded';
import { untilAvailable } from './untilAvailable';

export interface RetrievalRequest {
  workspaceId: number;
  /** The agent's collections, by name. */
  collections: string[];
  /** retrievalQuery() of the run's input. */
  query: string;
  /** request_context.resource_id: a document or collection the API found reachable. */
  resourceId?: string;
  /** Fail (knowledge_unavailable) when there is nothing to retrieve from, rather than answer without it. */
  required: boolean;
  /** The run's deadline: a database outage is waited out until then (absent in calls scheduled before it was passed). */
  deadlineAt?: number;
}

async function narrowed(r: RetrievalRequest): Promise<string[]> {
  if (!r.resourceId || !hasPrefix('collection', r.resourceId)) return r.collections;
  const name = await collectionName(r.workspaceId, r.resourceId);
  return name !== undefined && r.collections.includes(name) ? [name] : [];
}

/**
 * The best-ranked passages of the agent's knowledge for the run's input, narrowed to the request's
 * resource. Collections that do not exist yet hold nothing; when none of them exists the agent has no
 * knowledge, which a run that requires retrieval refuses (for good: retrying cannot change it).
 */
export function retrieveKnowledge(r: RetrievalRequest): Promise<Passage[]> {
  return heartbeating(() => untilAvailable(() => retrieve(r), r.deadlineAt));
}

async function retrieve(r: RetrievalRequest): Promise<Passage[]> {
  const keys = await collectionKeys(r.workspaceId, await narrowed(r));
  if (keys.length === 0) {
    if (r.required) throw ApplicationFailure.create({ type: 'knowledge_unavailable', message: 'The agent has no knowledge to retrieve from, and the request requires retrieval.', nonRetryable: true });
    return [];
  }
  if (!r.query) return [];
  const document = r.resourceId && hasPrefix('document', r.resourceId) ? r.resourceId : undefined;
  const rows = await searchChunks({ workspaceId: r.workspaceId, collectionKeys: keys, query: r.query, document, limit: MAX_PASSAGES });
  return rows.map((row, i) => ({ ...row, rank: i + 1 }));
}
