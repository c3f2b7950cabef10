import type { OutgoingHttpHeaders } from 'node:http';
import type { Scope } from '../../domain/scopes';

/** One request to the HTTP API, made in process with the caller's own credential. */
export interface ApiRequest {
  method: 'GET' | 'POST';
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
}

export interface ApiAnswer {
  status: number;
  headers: OutgoingHttpHeaders;
  /** The JSON body, or the text of any other body. */
  body: unknown;
  contentType: string;
}

export type CallApi = (request: ApiRequest) => Promise<ApiAnswer>;

type JsonSchema = Record<string, unknown>;

/**
 * A tool of the preview set: its one scope (checked by the dispatcher before the call), its schemas,
 * and how it is served, always by the HTTP endpoint that serves the same thing, never a second
 * implementation. `run` returns the endpoint's answer, which becomes the tool's result.
 */
export interface Tool {
  name: string;
  title: string;
  description: string;
  scope: Scope;
  inputSchema: JsonSchema;
  outputSchema: JsonSchema;
  run(args: Record<string, unknown>, api: CallApi): Promise<ApiAnswer>;
}

/** A tool argument the tool cannot use: a result with `isError`, like the endpoint's own refusals. */
export class BadArgument extends Error {}

/**
 * An id placed in a path: one segment of id characters. Anything else (`..` above all, which URL
 * parsing would resolve to another endpoint than the one the scope was checked for) is refused.
 */
function segment(name: string, value: unknown): string {
  if (typeof value !== 'string' || !/^[A-Za-z0-9_-]{1,200}$/.test(value)) throw new BadArgument(`${name} must be an id such as the ones list tools return.`);
  return value;
}

const string = (description: string, extra: JsonSchema = {}): JsonSchema => ({ type: 'string', description, ...extra });
const object = (properties: Record<string, JsonSchema>, required: string[] = []): JsonSchema => ({ type: 'object', properties, required, additionalProperties: false });
const page = { limit: { type: 'integer', minimum: 1, description: 'Items per page (clamped to the endpoint maximum).' }, cursor: string('The next_cursor of a previous page.') };
/** Answers are the endpoint's JSON object: the schema names its kind and leaves the rest to the API reference. */
const answer = (kind: string, required: string[] = []): JsonSchema => ({ type: 'object', description: `The ${kind}, as the HTTP endpoint answers it.`, required });
const list = answer('list', ['object', 'data']);

const runtimeInput = {
  input: { description: 'The user message: a non-empty string, or a structured object.', anyOf: [{ type: 'string', minLength: 1 }, { type: 'object' }] },
  external_ref: string('Your stable id for the end user or thread (at most 200 characters): the same value continues the same conversation.'),
  channel: string('Where the message came from.', { enum: ['api', 'web', 'website', 'whatsapp', 'phone', 'voice'] }),
  locale: string('The end user locale, e.g. en-GB.'),
  metadata: { type: 'object', description: 'Your own key-value pairs, stored with the run.' },
  request_context: { type: 'object', description: 'Context for this request (resource_id, …); identity-like keys are refused.' },
  response_format: { type: 'object', description: 'Structured output: {"type":"json_schema","name":…,"schema":…}.' },
  options: { type: 'object', description: 'Runtime options (timeout_ms, memory, knowledge_policy, …); streaming is not offered over MCP.' },
};

const forward = (request: (args: Record<string, unknown>) => ApiRequest) => (args: Record<string, unknown>, api: CallApi) => api(request(args));
/** A tool answers once: a stream would have no client to go to. Options that are not an object are the endpoint's to refuse. */
const withoutStreaming = (args: Record<string, unknown>) => {
  const options = args.options ?? {};
  return options !== null && typeof options === 'object' && !Array.isArray(options) ? { ...args, options: { ...options, stream: false } } : args;
};

const TEXT_TYPES = /^(text\/|application\/(json|xml|x-ndjson|csv|yaml|[a-z.+-]*\+json|[a-z.+-]*\+xml)$)/;
const MAX_TEXT_CHARS = 100_000;
/** Text documents up to this size come with their content (UTF-8: at most 4 bytes a character). */
const MAX_TEXT_BYTES = 4 * MAX_TEXT_CHARS;

export const TOOLS: Tool[] = [
  {
    name: 'run_agent',
    title: 'Run an agent',
    description: 'Runs one of the workspace agents on a message and answers with its reply (POST /api/v2/agents/{agent}/runs). The same external_ref continues a conversation.',
    scope: 'agents:run',
    inputSchema: object({ agent: string('The agent id (agt_…).'), ...runtimeInput }, ['agent', 'input']),
    outputSchema: answer('run response', ['id', 'status']),
    run: forward(({ agent, ...body }) => ({ method: 'POST', path: `/api/v2/agents/${segment('agent', agent)}/runs`, body: withoutStreaming(body) })),
  },
  {
    name: 'create_response',
    title: 'Create a response',
    description: 'Asks an agent for one answer without a conversation (POST /api/v2/responses).',
    scope: 'responses:create',
    inputSchema: object({ agent: string('The agent id (agt_…).'), ...runtimeInput }, ['agent', 'input']),
    outputSchema: answer('run response', ['id', 'status']),
    run: forward((args) => ({ method: 'POST', path: '/api/v2/responses', body: withoutStreaming(args) })),
  },
  {
    name: 'list_agents',
    title: 'List agents',
    description: 'The workspace agents, newest first, with their status and published version (GET /api/v2/agents).',
    scope: 'agents:read',
    inputSchema: object(page),
    outputSchema: list,
    run: forward(({ limit, cursor }) => ({ method: 'GET', path: '/api/v2/agents', query: { limit: limit as number, cursor: cursor as string } })),
  },
  {
    name: 'search_knowledge',
    title: 'Search knowledge',
    description: 'The best-ranked passages of the named knowledge collections for a query (POST /api/v2/knowledge/search).',
    scope: 'knowledge:read',
    inputSchema: object(
      {
        query: string('What to look for (web-search syntax: words, "phrases", -excluded).'),
        collections: { type: 'array', items: { type: 'string' }, minItems: 1, description: 'Collection names.' },
        limit: { type: 'integer', minimum: 1, maximum: 20, description: 'Passages to return (default 6).' },
        document: string('Only passages of this document (doc_…).'),
      },
      ['query', 'collections'],
    ),
    outputSchema: list,
    run: forward((body) => ({ method: 'POST', path: '/api/v2/knowledge/search', body })),
  },
  {
    name: 'list_documents',
    title: 'List documents',
    description: 'The workspace documents, newest first (GET /api/v2/documents).',
    scope: 'documents:read',
    inputSchema: object(page),
    outputSchema: list,
    run: forward(({ limit, cursor }) => ({ method: 'GET', path: '/api/v2/documents', query: { limit: limit as number, cursor: cursor as string } })),
  },
  {
    name: 'read_document',
    title: 'Read a document',
    description: 'A document record and, for text documents up to 400 KB, its content (GET /api/v2/documents/{id} and …/content; text is cut at 100,000 characters).',
    scope: 'documents:read',
    inputSchema: object({ document: string('The document id (doc_…).') }, ['document']),
    outputSchema: answer('document record, with `content` for text documents', ['id', 'status']),
    async run({ document }, api) {
      const record = await api({ method: 'GET', path: `/api/v2/documents/${segment('document', document)}` });
      const fields = record.body as { status?: string; mime_type?: string; size_bytes?: number };
      // Larger documents answer with their record only: their bytes would be read whole to show the first part.
      if (record.status !== 200 || fields.status !== 'uploaded' || !TEXT_TYPES.test(fields.mime_type ?? '') || (fields.size_bytes ?? Infinity) > MAX_TEXT_BYTES) return record;
      const content = await api({ method: 'GET', path: `/api/v2/documents/${segment('document', document)}/content` });
      if (content.status !== 200) return content;
      const text = typeof content.body === 'string' ? content.body : JSON.stringify(content.body);
      return { ...record, body: { ...(record.body as object), content: text.slice(0, MAX_TEXT_CHARS), content_truncated: text.length > MAX_TEXT_CHARS } };
    },
  },
  {
    name: 'create_report',
    title: 'Create a report',
    description: 'Starts a report: an agent writes it from a task and inputs (POST /api/v2/reports). It runs in the background: read it with read_report.',
    scope: 'reports:create',
    inputSchema: object(
      {
        agent: string('The agent id (agt_…).'),
        name: string('The report name.'),
        task: string('What the report should say.'),
        inputs: { type: 'object', description: 'Data the report is written from.' },
        format: string('The output format.', { enum: ['text', 'markdown', 'json'] }),
        schema: { type: 'object', description: 'The JSON Schema of a json report.' },
        metadata: { type: 'object', description: 'Your own key-value pairs.' },
      },
      ['agent', 'name', 'task'],
    ),
    outputSchema: answer('report record', ['id', 'status']),
    run: forward((body) => ({ method: 'POST', path: '/api/v2/reports', body })),
  },
  {
    name: 'read_report',
    title: 'Read a report',
    description: 'A report record with its status and, once completed, its output (GET /api/v2/reports/{id}).',
    scope: 'reports:read',
    inputSchema: object({ report: string('The report id (rpt_…).') }, ['report']),
    outputSchema: answer('report record', ['id', 'status']),
    run: forward(({ report }) => ({ method: 'GET', path: `/api/v2/reports/${segment('report', report)}` })),
  },
  {
    name: 'list_jobs',
    title: 'List jobs',
    description: 'The workspace jobs, newest first, with their progress (GET /api/v2/jobs).',
    scope: 'jobs:read',
    inputSchema: object({
      status: string('Only jobs in this status.', { enum: ['queued', 'running', 'completed', 'failed', 'cancelled'] }),
      type: string('Only jobs of this type.'),
      limit: { type: 'integer', minimum: 1 },
      offset: { type: 'integer', minimum: 0 },
    }),
    outputSchema: list,
    run: forward(({ status, type, limit, offset }) => ({ method: 'GET', path: '/api/v2/jobs', query: { status: status as string, type: type as string, limit: limit as number, offset: offset as number } })),
  },
  {
    name: 'read_usage',
    title: 'Read usage',
    description: 'The credit balance and the credits used per day and channel (GET /api/v2/usage).',
    scope: 'usage:read',
    inputSchema: object({ days: { type: 'integer', minimum: 1, maximum: 90, description: 'How many days back (default 30).' } }),
    outputSchema: answer('usage', ['balance', 'by_day']),
    run: forward(({ days }) => ({ method: 'GET', path: '/api/v2/usage', query: { days: days as number } })),
  },
  {
    name: 'read_conversation_messages',
    title: 'Read conversation messages',
    description: 'The messages of a conversation, oldest first (GET /api/v2/conversations/{id}/messages).',
    scope: 'messages:read',
    inputSchema: object(
      { conversation: string('The conversation id (conv_…).'), after: string('Only messages after this message id (msg_…).'), limit: { type: 'integer', minimum: 1, maximum: 100 } },
      ['conversation'],
    ),
    outputSchema: list,
    run: forward(({ conversation, after, limit }) => ({ method: 'GET', path: `/api/v2/conversations/${segment('conversation', conversation)}/messages`, query: { after: after as string, limit: limit as number } })),
  },
];

export const TOOL_BY_NAME = new Map(TOOLS.map((t) => [t.name, t]));

/** tools/list: what a client sees; the scope each tool needs travels in `_meta`. */
export function listedTools() {
  return TOOLS.map((t) => ({
    name: t.name,
    title: t.title,
    description: t.description,
    inputSchema: t.inputSchema,
    outputSchema: t.outputSchema,
    annotations: { title: t.title, readOnlyHint: t.name.startsWith('list_') || t.name.startsWith('read_') || t.name.startsWith('search_') },
    _meta: { 'io.agent-execution/scope': t.scope },
  }));
}
