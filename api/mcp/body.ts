import type { Context } from 'koa';
import { ValidationError } from 'yup';
import { readBody } from '../middleware/readBody';
import { McpMessage } from '../routes/mcp/schema';
import { JSONRPC, TransportError, type JsonRpcRequest } from './protocol';

/** One JSON-RPC message is small; tool arguments carry at most an execution request's body. */
const MAX_BODY_BYTES = 1024 * 1024;

/**
 * The POSTed JSON-RPC message: a request, or undefined for a notification or a response (which
 * need no answer). A batch, malformed JSON or a message that is not JSON-RPC 2.0 is a 400.
 */
export async function readJsonRpc(ctx: Context): Promise<JsonRpcRequest | undefined> {
  const raw = await readBody(ctx.req, MAX_BODY_BYTES);
  if (raw === 'tooLarge') throw new TransportError(413, JSONRPC.invalidRequest, `A message is at most ${MAX_BODY_BYTES} bytes.`);
  let message: unknown;
  try {
    message = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new TransportError(400, JSONRPC.parseError, 'The body is not valid JSON.');
  }
  if (Array.isArray(message)) throw new TransportError(400, JSONRPC.invalidRequest, 'JSON-RPC batches are not supported: send one message per POST.');
  if (message === null || typeof message !== 'object') throw new TransportError(400, JSONRPC.invalidRequest, 'The body must be one JSON-RPC 2.0 message.');
  const m = message as Record<string, unknown>;
  try {
    McpMessage.validateSync(m, { abortEarly: true });
  } catch (err) {
    if (err instanceof ValidationError) throw new TransportError(400, JSONRPC.invalidRequest, err.errors[0]);
    throw err;
  }
  if (!('id' in m) || !('method' in m)) return undefined;
  // A request names both (a null id or method would be a notification's or a response's).
  if (m.id === undefined || m.method === undefined) throw new TransportError(400, JSONRPC.invalidRequest, 'A request has a string or integer id and a string method.');
  return m as unknown as JsonRpcRequest;
}
