import { EXTRACTION_STATUSES, type ExtractionFields } from './extractions';
import { anyValue, closed, constant, failureRecord, freeObject, integer, list, oneOfValues, orNull, publicId, text, timestamp, type Static } from './shape';

/**
 * The extraction as the API shows it, declared once for its view and the OpenAPI document. Apart from
 * domain/extractions.ts, which the extraction workflow imports: the workflow bundle takes neither
 * TypeBox nor the ids' node:crypto.
 */
export const Extraction = closed({
  id: publicId('extraction'),
  object: constant('extraction'),
  document: publicId('document'),
  agent: text(),
  status: oneOfValues(EXTRACTION_STATUSES),
  schema: freeObject(),
  instructions: orNull(text()),
  progress: closed({ segments_total: integer({ minimum: 0 }), segments_done: integer({ minimum: 0 }) }),
  runs: list(publicId('run'), { description: 'One run per segment.' }),
  result: anyValue('The merged value; null until completed.'),
  error: failureRecord(),
  created_at: timestamp(),
  started_at: orNull(timestamp()),
  completed_at: orNull(timestamp()),
});

export function extractionObject(row: ExtractionFields): Static<typeof Extraction> {
  return {
    id: row.public_id,
    object: 'extraction',
    document: row.document,
    agent: row.agent,
    status: row.status,
    schema: row.schema,
    instructions: row.instructions,
    progress: { segments_total: row.segments_total, segments_done: row.segments_done },
    runs: row.runs,
    result: row.result ?? null,
    error: row.error_code ? { code: row.error_code, message: row.error_message } : null,
    created_at: row.created_at.toISOString(),
    started_at: row.started_at?.toISOString() ?? null,
    completed_at: row.completed_at?.toISOString() ?? null,
  };
}
