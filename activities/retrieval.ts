import { ApplicationFailure } from '@temporalio/activity';
import { AES, GENAI, OPERATION, spanName } from '../domain/genaiSpans';
import { contentCaptured } from '../infra/genaiContent';
import { inSpan } from '../infra/tracing';
import { hasPrefix } from '../domain/ids';
import { MAX_PASSAGES, type Passage } from '../domain/knowledge';
import { collectionKeys, searchChunks } from '../db/knowledgeChunks';
import { collectionName } from '../db/knowledgeCollections';
import { withStatementTimeout, type Sql } from '../db/sql';
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

async function narrowed(r: RetrievalRequest, tx: Sql): Promise<string[]> {
  if (!r.resourceId || !hasPrefix('collection', r.resourceId)) return r.collections;
  const name = await collectionName(r.workspaceId, r.resourceId, tx);
  return name !== undefined && r.collections.includes(name) ? [name] : [];
}

/**
 * The best-ranked passages of the agent's knowledge for the run's input, narrowed to the request's
 * resource. Collections that do not exist yet hold nothing; when none of them exists the agent has no
 * knowledge, which a run that requires retrieval refuses (for good: retrying cannot change it).
 */
export function retrieveKnowledge(r: RetrievalRequest): Promise<Passage[]> {
  // A slow query (not an outage) is stopped, and the activity's retry policy decides, as before.
  return heartbeating(() => traced(r, () => untilAvailable(() => withStatementTimeout(RETRIEVAL_STATEMENT_TIMEOUT_MS, (tx) => retrieve(r, tx)), r.deadlineAt)));
}

/** The retrieval as a `retrieval` span of the GenAI conventions: its collections and how many chunks it found (the query only as infra/genaiContent.ts allows). */
function traced(r: RetrievalRequest, work: () => Promise<Passage[]>): Promise<Passage[]> {
  const source = r.collections.join(',');
  const attributes = { [GENAI.operation]: OPERATION.retrieval, [GENAI.dataSource]: source, ...(contentCaptured() && { [GENAI.retrievalQuery]: r.query }) };
  return inSpan(spanName(OPERATION.retrieval, source), { attributes }, async (span) => {
    const passages = await work();
    span.setAttribute(AES.retrievedChunks, passages.length);
    return passages;
  });
}

/** The longest one retrieval statement may take. */
const RETRIEVAL_STATEMENT_TIMEOUT_MS = 10_000;

async function retrieve(r: RetrievalRequest, tx: Sql): Promise<Passage[]> {
  const keys = await collectionKeys(r.workspaceId, await narrowed(r, tx), tx);
  if (keys.length === 0) {
    if (r.required) throw ApplicationFailure.create({ type: 'knowledge_unavailable', message: 'The agent has no knowledge to retrieve from, and the request requires retrieval.', nonRetryable: true });
    return [];
  }
  if (!r.query) return [];
  const document = r.resourceId && hasPrefix('document', r.resourceId) ? r.resourceId : undefined;
  const rows = await searchChunks({ workspaceId: r.workspaceId, collectionKeys: keys, query: r.query, document, limit: MAX_PASSAGES }, tx);
  return rows.map((row, i) => ({ ...row, rank: i + 1 }));
}
