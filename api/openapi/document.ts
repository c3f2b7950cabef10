import { STREAM_VERSION } from '../../domain/streamEvents';
import { headers, sharedSchemas } from './components';
import type { JsonSchema } from './jsonSchema';
import type { Resource } from './operation';
import { requestComponents } from './requestSchema';
import { agents } from './paths/agents';
import { codec } from './paths/codec';
import { conversations } from './paths/conversations';
import { documents } from './paths/documents';
import { documentTransfers } from './paths/documentTransfers';
import { extractions } from './paths/extractions';
import { health } from './paths/health';
import { jobs } from './paths/jobs';
import { schedules } from './paths/schedules';
import { secrets } from './paths/secrets';
import { knowledge } from './paths/knowledge';
import { logs } from './paths/logs';
import { mcp } from './paths/mcp';
import { metrics } from './paths/metrics';
import { openapi } from './paths/openapi';
import { partnerWebhooks } from './paths/partnerWebhooks';
import { reports } from './paths/reports';
import { responses } from './paths/responses';
import { runs } from './paths/runs';
import { usage } from './paths/usage';
import { webhooks as catalogue } from './paths/webhooks';
import { v1 } from './paths/v1';
import { securitySchemes } from './security';
import { webhooks } from './webhooks';

/** One module per route folder (api/routes/<r>/), in the order the reference lists them. */
const RESOURCES: Resource[] = [responses, agents, conversations, runs, documents, documentTransfers, knowledge, reports, extractions, jobs, schedules, secrets, logs, usage, catalogue, partnerWebhooks, mcp, health, metrics, codec, openapi, v1];

const TAGS = [
  { name: 'Execution', description: 'Run an agent: statelessly, on a structured payload, or in a conversation; as JSON or as an event stream.' },
  { name: 'Agents', description: 'The workspace\'s agents, as callers see them.' },
  { name: 'Conversations', description: 'Threads of messages with one assistant.' },
  { name: 'Runs', description: 'Read, follow and cancel a run.' },
  { name: 'Documents', description: 'A record first, then its bytes, uploaded once through a signed URL.' },
  { name: 'Document transfer', description: 'The token-addressed upload and download paths: the signed token is the credential.' },
  { name: 'Knowledge', description: 'Turning a document into knowledge of a collection.' },
  { name: 'Reports', description: 'An agent does a task once; the answer is kept.' },
  { name: 'Extractions', description: 'Structured data drawn from a document.' },
  { name: 'Jobs', description: 'Queued work over many items.' },
  { name: 'Schedules', description: 'Runs on a cron expression or an interval (beyond the spec).' },
  { name: 'Secrets', description: 'Credentials agents\' tools use, sealed at rest; set and listed by name, never read back (beyond the spec).' },
  { name: 'Logs', description: 'Execution metadata, never transcript content.' },
  { name: 'Usage', description: 'The credit balance and what was billed.' },
  { name: 'Partner webhooks', description: 'A partner\'s webhook endpoints and their deliveries (v1 paths, partner keys).' },
  { name: 'MCP', description: 'The Model Context Protocol tool transport: one JSON-RPC message per POST, tools only.' },
  { name: 'Webhook events', description: 'What the service POSTs to a partner\'s endpoint: the spec\'s envelope, signed (see `X-Service-Signature`).' },
  { name: 'Operations', description: 'Beside the API, for operators: health, metrics, the payload codec, this document.' },
];

const DESCRIPTION = `Runs configured AI agents for workspaces and bills the work as usage. Every request is bound to one workspace; the caller's identity comes only from the credential, never from the body.

**Errors.** Every failure is the error object (\`Error\`): \`error.code\` (switch on it), \`error.message\`, \`error.request_id\`, plus the run's \`id\`, \`status\` and \`trace_id\` when the failure ended a run that had started. Unknown paths and methods answer 501 \`not_implemented\`. A resource of another workspace answers exactly like a missing one.

**Scopes.** Each operation names its scope (\`x-required-scopes\`); scopes never imply one another. A valid credential without it gets 403 \`permission_denied\` naming the scope.

**Rate limits.** Fixed 60-second windows: 900 per credential, 300 per workspace, 300 per workspace and endpoint, 300 per agent, 60 per end user. The first to run out refuses with 429 \`rate_limited\` and \`Retry-After\`.

**Idempotency.** Runs, responses, messages, documents, knowledge ingestions, reports, extractions and jobs take \`Idempotency-Key\` (at most 255 characters): the same key and body replay the stored answer byte for byte for 24 hours, marked \`Idempotency-Replayed: true\` (runs, responses, messages, documents, ingestions) or \`Idempotent-Replay: true\` (reports, extractions, jobs); the same key with another body is 409 \`idempotency_conflict\`.

**Paging.** Cursors are opaque: /logs returns \`next\`; other lists return \`next_cursor\` and take \`cursor\`; conversation messages take \`after\` (a message id); /api/v2/jobs pages by \`offset\`.

**Versions.** The API is version 2 under /api/v2/ (partner webhook management under /api/v1/); the stream contract is \`${STREAM_VERSION}\`; webhook envelopes carry the endpoint's \`api_version\`.`;

/** Which operations need each scope, for the application credential's scope list. */
function scopeUse(paths: Record<string, Record<string, JsonSchema>>): Map<string, string[]> {
  const use = new Map<string, string[]>();
  for (const [path, item] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(item)) {
      for (const scope of op['x-required-scopes'] as string[]) use.set(scope, [...(use.get(scope) ?? []), `${method.toUpperCase()} ${path}`]);
    }
  }
  return use;
}

function build(): JsonSchema {
  const paths = Object.assign({}, ...RESOURCES.map((r) => r.paths)) as Record<string, Record<string, JsonSchema>>;
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://spec.openapis.org/oas/3.1/dialect/base',
    info: { title: 'Agent Execution Service API', version: '2.0.0', description: DESCRIPTION, license: { name: 'Apache-2.0', identifier: 'Apache-2.0' } },
    servers: [{ url: '/', description: 'This deployment' }],
    tags: TAGS,
    paths,
    webhooks,
    components: {
      // The request side's named schemas come from the validation schemas (api/openapi/requestSchema.ts).
      schemas: Object.assign({}, sharedSchemas, requestComponents, ...RESOURCES.map((r) => r.schemas ?? {})),
      headers,
      securitySchemes: securitySchemes(scopeUse(paths)),
    },
  };
}

/** The API's OpenAPI 3.1 document, kept as source beside the routes it describes (test/openapi.test.ts holds them equal). */
export const openApiDocument: JsonSchema = build();
