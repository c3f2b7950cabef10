import { HANDSHAKE_REVISIONS, JSONRPC, SUPPORTED_REVISIONS } from '../../mcp/protocol';
import { anyObject, closed, constant, integer, string } from '../jsonSchema';
import { PostMcp } from '../../routes/mcp/schema';
import { json, operation, type Resource } from '../operation';

const id = { type: ['string', 'integer'] };
const rpcError = closed({ jsonrpc: constant('2.0'), id: { type: ['string', 'integer', 'null'] }, error: closed({ code: integer(), message: string(), data: {} }, { optional: ['data'] }) });
const rpcResult = closed({ jsonrpc: constant('2.0'), id, result: anyObject('The method\'s result: for tools/call a CallToolResult (`content`, `structuredContent`, `isError`).') });

const REVISION_HEADER = {
  name: 'MCP-Protocol-Version',
  in: 'header',
  required: false,
  schema: { type: 'string', examples: SUPPORTED_REVISIONS },
  description: `Decides the era: \`${SUPPORTED_REVISIONS[0]}\` is the modern era (no handshake); ${HANDSHAKE_REVISIONS.map((r) => `\`${r}\``).join(', ')} are the handshake era. Absent means \`2025-03-26\`. Any other value is 400 with ${JSONRPC.unsupportedVersion}.`,
};
const mirrored = (name: string, what: string) => ({ name, in: 'header', required: false, schema: string(), description: `Modern era: mirrors ${what}; disagreeing with the body is 400 with ${JSONRPC.mirroredHeaderMismatch}.` });

const notAllowed = (method: 'get' | 'delete') =>
  operation(method, {
    id: method === 'get' ? 'mcpGet' : 'mcpDelete',
    summary: method === 'get' ? 'No event stream' : 'No session to end',
    description: 'The transport has no event stream and no sessions: 405, with `Allow: POST`.',
    tag: 'MCP',
    access: { credential: 'none' },
    responses: {},
    errors: ['method_not_allowed'],
  });

export const mcp: Resource = {
  paths: {
    '/mcp': {
      post: operation('post', {
        id: 'mcpMessage',
        summary: 'MCP tool transport',
        description: [
          'One JSON-RPC message per POST; the reply is one JSON object. No event stream, no sessions (`Mcp-Session-Id` is ignored and never issued); only tools are offered.',
          'Methods: `initialize` (handshake era; answers in the newest handshake revision for an unknown one), `ping`, `server/discover`, `tools/list`, `tools/call`. A modern-era request carries its client capabilities in `params._meta["io.modelcontextprotocol/clientCapabilities"]`.',
          'A tool call needs the tool\'s own scope besides `mcp:connect`: without it, 403 whose `WWW-Authenticate` names every scope needed. Failures inside a tool (not found, bad argument, out of credit, rate limited) are 200 results with `isError: true`. A request from an Origin outside `MCP_ALLOWED_ORIGINS` is 403.',
        ].join('\n\n'),
        tag: 'MCP',
        access: { credential: 'mcp' },
        parameters: [REVISION_HEADER, mirrored('Mcp-Method', 'the body\'s `method`'), mirrored('Mcp-Name', 'the body\'s `params.name`')],
        request: PostMcp,
        responses: {
          '200': json('The reply: a result, or (handshake era) a JSON-RPC error such as an unknown method.', { oneOf: [rpcResult, rpcError] }),
          '202': { description: 'A notification or a response: accepted, nothing to answer (empty body).' },
          '400': json(`A batch, malformed JSON, not JSON-RPC 2.0, an unsupported revision (${JSONRPC.unsupportedVersion}, \`data.supported\` and \`data.requested\`), mirrored headers that disagree (${JSONRPC.mirroredHeaderMismatch}), or a modern request without client capabilities.`, rpcError),
          '404': json(`Modern era: an unknown method (${JSONRPC.methodNotFound}) or tool (${JSONRPC.invalidParams}).`, rpcError),
          '413': json('A message over 1 MiB.', rpcError),
          '429': { ...json(`A rate limit refused a request before any tool (\`tools/list\`): ${JSONRPC.rateLimited}, \`data.retry_after\` in seconds. A tool call refused by a limit is a 200 result with \`isError\`.`, rpcError), headers: { 'Retry-After': { schema: { type: 'integer' } } } },
        },
      }),
      get: notAllowed('get'),
      delete: notAllowed('delete'),
    },
  },
};
