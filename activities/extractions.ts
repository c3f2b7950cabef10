import { ApplicationFailure, Context } from '@temporalio/activity';
import { maxRunCost } from '../domain/billing';
import { extractorFor } from '../domain/knowledge';
import { MAX_SEGMENTS, mergeExtracted, SEGMENT_CHARS, segments, segmentTask } from '../domain/extractions';
import { mintId } from '../domain/ids';
import type { RunInput, RunOutcome } from '../domain/runs';
import { findRunnableAgent } from '../db/agents';
import { reserveCredits } from '../db/creditReservations';
import { findDocument } from '../db/documents';
import { extractionById, recordExtractionProgress, settleExtractionRecord, startExtractionRecord } from '../db/extractions';
import { modelWindow } from '../infra/modelWindow';
import { storeNamed } from '../storage';
import { heartbeating } from './bounded';
import { extractText } from './extract';

export type ExtractionWorkspace = RunInput['workspace'];

export type ExtractionPlan = { state: 'gone' } | { state: 'failed'; error: { code: string; message: string } } | { state: 'planned'; runs: RunInput[]; maximum: number };

const failed = (code: string, message: string): ExtractionPlan => ({ state: 'failed', error: { code, message } });

/** The document's text, whole: an extraction reads all of it, up to MAX_SEGMENTS segments. */
async function documentText(document: NonNullable<Awaited<ReturnType<typeof findDocument>>>): Promise<string | undefined> {
  const bytes = await storeNamed(document.storage!).read({ documentKey: document.id, workspace: document.workspace, document: document.public_id, uploadKey: document.storage_key! });
  let text = '';
  try {
    for await (const piece of extractText(extractorFor(document.mime_type)!, bytes, Context.current().cancellationSignal)) {
      text += piece.text;
      if (text.length > MAX_SEGMENTS * SEGMENT_CHARS * 1.2) return undefined;
    }
  } finally {
    bytes.destroy();
  }
  return text;
}

/**
 * queued → running: reads the document's text, cuts it into segments and plans one run of the
 * agent per segment (structured output with the request's schema, no tools, no memory, no
 * retrieval), recording their ids. What cannot be extracted from fails the extraction for good.
 */
export function beginExtraction(e: { extractionId: string; workspace: ExtractionWorkspace }): Promise<ExtractionPlan> {
  return heartbeating(async () => {
    const extraction = await extractionById(e.extractionId);
    if (!extraction || extraction.status === 'completed' || extraction.status === 'failed') return { state: 'gone' };
    const document = await findDocument(extraction.workspace_id, extraction.document);
    if (!document) return failed('document_not_found', 'The document was deleted before it could be read.');
    if (document.status !== 'uploaded' || !document.storage) return failed('document_not_uploaded', 'The document has no content.');
    const agent = await findRunnableAgent(extraction.workspace_id, extraction.agent);
    if (!agent?.publishedConfig || agent.status !== 'active') return failed('agent_not_available', 'The agent is not active, or has no published version.');
    let text: string | undefined;
    try {
      text = await documentText(document);
    } catch (err) {
      if (err instanceof ApplicationFailure && err.type === 'invalid_request') return failed('invalid_request', err.message);
      throw err;
    }
    const parts = text === undefined ? [] : segments(text);
    if (text === undefined || parts.length > MAX_SEGMENTS) {
      return failed('invalid_request', `The document's text is longer than one extraction reads (${MAX_SEGMENTS} segments of ${SEGMENT_CHARS} characters); extract from a shorter document.`);
    }
    if (parts.length === 0) return failed('invalid_request', 'The document has no text to extract from.');
    const config = agent.publishedConfig;
    const responseFormat = { type: 'json_schema' as const, name: 'extraction', schema: extraction.schema, strict: true as const };
    const contextTokens = await modelWindow();
    const runs: RunInput[] = parts.map((part, i) => ({
      runId: mintId('run'),
      kind: 'extraction',
      requestId: extraction.request_id,
      traceId: extraction.trace_id,
      workspace: e.workspace,
      agent: { id: agent.id, publicId: agent.publicId, version: agent.publishedVersion, config },
      input: segmentTask({ document: document.public_id, name: document.name, part: i + 1, parts: parts.length, text: part, instructions: extraction.instructions ?? undefined }),
      attachments: [],
      channel: '',
      metadata: { extraction: extraction.public_id },
      requestContext: {},
      options: { knowledgePolicy: 'none', memoryPolicy: 'none', toolPolicy: 'none', preview: false, stream: false, timeoutMs: 120_000, responseFormat },
      acceptedAt: Date.now(),
      contextTokens,
    }));
    const longest = runs.reduce((a, b) => (JSON.stringify(a.input).length >= JSON.stringify(b.input).length ? a : b));
    const maximum = maxRunCost({ config, request: [longest.input, []], format: responseFormat, tools: [], memory: false, knowledge: false, contextTokens });
    if (!(await startExtractionRecord(extraction.public_id, runs.map((r) => r.runId)))) return { state: 'gone' };
    return { state: 'planned', runs, maximum };
  });
}

/** A segment run's credit hold, taken before it starts; false when the balance cannot cover it. */
export async function holdSegmentCredits(h: { workspaceId: number; runId: string; maximum: number }): Promise<boolean> {
  return reserveCredits(h.workspaceId, h.runId, h.maximum);
}

export async function extractionProgress(p: { extractionId: string; segmentsDone: number }): Promise<void> {
  await recordExtractionProgress(p.extractionId, p.segmentsDone);
}

/** running → completed with the segments' results merged, or → failed with the first failure. */
export async function settleExtraction(s: { extractionId: string; outcomes?: RunOutcome[]; error?: { code: string; message: string } }): Promise<void> {
  if (s.error) return settleExtractionRecord(s.extractionId, { status: 'failed', error: s.error });
  const values = (s.outcomes ?? []).map((o) => o.run.output.find((item) => item.type === 'json')?.json);
  await settleExtractionRecord(s.extractionId, { status: 'completed', result: mergeExtracted(values) });
}
