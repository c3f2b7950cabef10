import { INGESTION_STATUSES, type IngestionFields } from './knowledge';
import { boolean, closed, constant, failureRecord, integer, list, oneOfValues, orNull, publicId, text, timestamp, type Static } from './shape';

/**
 * The knowledge API's answers (an ingestion, a search's passages), declared once for their views and
 * the OpenAPI document. Apart from domain/knowledge.ts, which the run workflow imports: the workflow
 * bundle takes neither TypeBox nor the ids' node:crypto.
 */
export const KnowledgeIngestion = closed({
  id: publicId('ingestion'),
  object: constant('knowledge.ingestion'),
  document: publicId('document'),
  collection: text(),
  status: oneOfValues(INGESTION_STATUSES),
  progress: closed({ bytes_total: integer({ minimum: 0 }), bytes_processed: integer({ minimum: 0 }), chunks_indexed: integer({ minimum: 0 }) }),
  reused: boolean('The same bytes were indexed already by the same pipeline: no work was done.'),
  error: failureRecord(),
  created_at: timestamp(),
  started_at: orNull(timestamp()),
  completed_at: orNull(timestamp()),
});

/** The public ingestion record. `reused`: the same bytes were indexed already, so no work was done. */
export function ingestionObject(row: IngestionFields): Static<typeof KnowledgeIngestion> {
  return {
    id: row.public_id,
    object: 'knowledge.ingestion',
    document: row.document,
    collection: row.collection,
    status: row.status,
    progress: { bytes_total: row.bytes_total, bytes_processed: row.bytes_processed, chunks_indexed: row.chunks_indexed },
    reused: row.reused,
    error: row.error_code ? { code: row.error_code, message: row.error_message } : null,
    created_at: row.created_at.toISOString(),
    started_at: row.started_at?.toISOString() ?? null,
    completed_at: row.completed_at?.toISOString() ?? null,
  };
}

/** A search's answer: the passages a run would retrieve. */
export const PassageList = closed({
  object: constant('list'),
  data: list(closed({ object: constant('passage'), rank: integer({ minimum: 1 }), chunk: publicId('chunk'), document: publicId('document'), name: text(), text: text() })),
});

/** The passages, best first, ranked from 1. */
export function passageList(rows: { chunk: string; document: string; name: string; text: string }[]): Static<typeof PassageList> {
  return { object: 'list', data: rows.map((r, i) => ({ object: 'passage', rank: i + 1, chunk: r.chunk, document: r.document, name: r.name, text: r.text })) };
}
