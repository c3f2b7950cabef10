/**
 * The MCP transport's protocol facts (spec "POST /mcp", Versioning 4): the revisions served, the era a
 * request belongs to, and the JSON-RPC codes the transport answers with.
 */

/** The modern era: no handshake; every request carries its client capabilities. */
export const MODERN_REVISION = '2026-07-28';
/** The handshake revisions, newest first: `initialize` answers in the first when the client's is unknown. */
export const HANDSHAKE_REVISIONS = ['2025-06-18', '2025-03-26', '2024-11-05'] as const;
export const SUPPORTED_REVISIONS = [MODERN_REVISION, ...HANDSHAKE_REVISIONS];
/** No `MCP-Protocol-Version` header means this revision. */
export const DEFAULT_REVISION = '2025-03-26';

export type Era = 'modern' | 'handshake';

export const JSONRPC = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  /** In JSON-RPC's range for server errors: a rate limit refused the request (HTTP 429, Retry-After). */
  rateLimited: -32029,
  mirroredHeaderMismatch: -32020,
  unsupportedVersion: -32022,
} as const;

export type RequestId = string | number;

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: RequestId;
  method: string;
  params?: Record<string, unknown>;
}

/** A JSON-RPC failure of a request that never reached a tool, with the HTTP status it is answered with. */
export class TransportError extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export function reply(id: RequestId | null, result: unknown) {
  return { jsonrpc: '2.0', id, result };
}

export function errorReply(id: RequestId | null, err: TransportError) {
  return { jsonrpc: '2.0', id, error: { code: err.code, message: err.message, ...(err.data !== undefined && { data: err.data }) } };
}

/** The revision a request speaks: its header alone decides (absent: 2025-03-26). */
export function revisionOf(header: string): string {
  return header === '' ? DEFAULT_REVISION : header;
}

export function eraOf(revision: string): Era {
  return revision === MODERN_REVISION ? 'modern' : 'handshake';
}

export function unsupportedRevision(requested: string): TransportError {
  return new TransportError(400, JSONRPC.unsupportedVersion, `Unsupported MCP protocol version "${requested}".`, { supported: SUPPORTED_REVISIONS, requested });
}

/**
 * A modern-era request carries the client's capabilities in its `_meta` (only their presence is
 * checked); older drafts put them beside the params, which is accepted too.
 */
export function hasClientCapabilities(params: Record<string, unknown> | undefined): boolean {
  const meta = params?._meta as Record<string, unknown> | undefined;
  return [meta?.['io.modelcontextprotocol/clientCapabilities'], meta?.clientCapabilities, params?.clientCapabilities].some((c) => c !== null && typeof c === 'object');
}
