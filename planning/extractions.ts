import { chooseConfiguration } from '../domain/agents';
import { invalidRequest } from '../domain/errors';
import { EXTRACTION_INSTRUCTIONS } from '../domain/extractions';
import { mintId } from '../domain/ids';
import { EXTRACTORS, extractorFor } from '../domain/knowledge';
import { builtinAgent, findRunnableAgent } from '../db/agents';
import { findDocument } from '../db/documents';
import { insertExtraction } from '../db/extractions';
import { requireUploaded } from './uploaded';
import { notFound } from '../callers/tenancy';

/** The agent a request names (active, published), or the workspace's built-in extraction agent. */
async function extractingAgent(workspaceId: number, named: string | undefined): Promise<string> {
  if (!named) {
    return builtinAgent({ workspaceId, builtin: 'extraction', name: 'Document extraction (built in)', config: { instructions: EXTRACTION_INSTRUCTIONS }, mintPublicId: () => mintId('agent') });
  }
  const agent = await findRunnableAgent(workspaceId, named);
  if (!agent) throw notFound('agent_not_found');
  chooseConfiguration(agent.status, false, false);
  return agent.publicId;
}

/**
 * Records an extraction from the workspace's document: the document must exist (404) with content
 * (409) of a type that can be read (400), and the agent must be able to run (404/409). `begin`
 * records the recovery point once the request is known to be good. Used by the endpoint and by
 * extractions.batch jobs; the caller starts the workflow.
 */
export async function createExtraction(
  c: { id: string; workspaceId: number; document: string; schema: Record<string, unknown>; agent?: string; instructions?: string; requestId: string; traceId: string },
  begin: () => Promise<void> | undefined = () => undefined,
): Promise<void> {
  const document = await findDocument(c.workspaceId, c.document);
  if (!document) throw notFound('document_not_found');
  requireUploaded(document);
  if (!extractorFor(document.mime_type)) {
    throw invalidRequest(`Data cannot be extracted from a ${document.mime_type} document; supported types: ${Object.keys(EXTRACTORS).join(', ')}.`);
  }
  const agent = await extractingAgent(c.workspaceId, c.agent);
  await begin();
  const runnable = (await findRunnableAgent(c.workspaceId, agent))!;
  await insertExtraction({
    publicId: c.id,
    workspaceId: c.workspaceId,
    documentKey: document.id,
    document: document.public_id,
    agentKey: runnable.id,
    schema: c.schema,
    instructions: c.instructions,
    requestId: c.requestId,
    traceId: c.traceId,
  });
}
