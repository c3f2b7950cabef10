import * as yup from 'yup';

/**
 * The one JSON-RPC message POSTed to /mcp, as the transport reads it (api/mcp/body.ts) and as the
 * OpenAPI document shows it. A refusal here is a JSON-RPC error (-32600), not the API's envelope.
 */
const id = yup
  .mixed<string | number>()
  .nullable()
  .test('id', 'A request has a string or integer id and a string method.', (v) => v === undefined || typeof v === 'string' || Number.isSafeInteger(v))
  .meta({ jsonSchema: { type: ['string', 'integer'] } });

export const McpMessage = yup
  .object({
    jsonrpc: yup.string().oneOf(['2.0'], 'The body must be one JSON-RPC 2.0 message.').required('The body must be one JSON-RPC 2.0 message.').meta({ jsonSchema: { const: '2.0' } }),
    id,
    method: yup.string().strict().typeError('A request has a string or integer id and a string method.'),
    params: yup.object().strict().typeError('params must be an object.').nonNullable('params must be an object.').meta({ jsonSchema: { type: 'object', description: 'The method\'s parameters.' } }),
    result: yup.mixed().meta({ jsonSchema: {} }),
    error: yup.mixed().meta({ jsonSchema: {} }),
  })
  .meta({ jsonSchema: { description: 'A request (id and method), a notification (method, no id) or a response.' } });

export const PostMcp = { body: McpMessage };
