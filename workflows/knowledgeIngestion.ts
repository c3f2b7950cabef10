import { ActivityFailure, ApplicationFailure, type RetryPolicy } from '@temporalio/workflow';
import type { IngestionInput, IngestionOutcome } from '../workflowClients/knowledgeIngestion.client';
import { namedActivities } from './namedActivities';

/** Bookkeeping in PostgreSQL: short and idempotent, retried until it succeeds (through a database outage). */
const BOOKKEEPING_RETRY: RetryPolicy = { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m' };

/**
 * Extraction and indexing: a few tries over a couple of minutes (a worker that dies mid-document, a
 * database that blips). Unreadable content (invalid_request) is final. Each attempt starts over and
 * heartbeats with every batch, so a dead worker's attempt is retried within a minute.
 */
const INDEXING_RETRY: RetryPolicy = { initialInterval: '5s', backoffCoefficient: 2, maximumInterval: '1m', maximumAttempts: 5, nonRetryableErrorTypes: ['invalid_request'] };

const { beginIngestion, completeIngestion, failIngestion } = namedActivities(
  { startToCloseTimeout: '30s', retry: BOOKKEEPING_RETRY },
  { beginIngestion: 'begin: reuse or index', completeIngestion: 'complete: switch to the new chunks', failIngestion: 'record the failure' },
);
const { indexDocument } = namedActivities({ startToCloseTimeout: '30m', heartbeatTimeout: '1m', retry: INDEXING_RETRY }, { indexDocument: 'extract, chunk and index the document' });

function failureOf(err: unknown): { code: string; message: string } {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure && cause.type === 'invalid_request') return { code: 'invalid_request', message: cause.message };
  return { code: 'internal_error', message: 'The document could not be indexed; ingest it again.' };
}

/**
 * One ingestion of a document into a collection: queued → running → completed, or → failed with
 * an error code. The same bytes already indexed by the same pipeline complete without work; new
 * chunks replace the document's earlier ones atomically. A document deleted meanwhile ends it (gone).
 */
export async function knowledgeIngestion(input: IngestionInput): Promise<IngestionOutcome> {
  const { ingestionId } = input;
  try {
    const start = await beginIngestion(ingestionId);
    if (start.state === 'gone') return 'gone';
    if (start.state === 'reusable') {
      await completeIngestion({ ingestionId, reusedChunks: start.chunks });
      return 'completed';
    }
    const indexed = await indexDocument(ingestionId);
    if (indexed.state === 'gone') return 'gone';
    await completeIngestion({ ingestionId });
    return 'completed';
  } catch (err) {
    await failIngestion({ ingestionId, ...failureOf(err) });
    return 'failed';
  }
}
