import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';

/**
 * A real MCP server (the SDK's Server, stateless Streamable HTTP on a loopback port) whose words are
 * the test's: `quote` answers `text` as its result, `fail` answers a JSON-RPC error whose message is
 * `text`. `json`: answers as JSON bodies; otherwise as event streams.
 */
export interface QuotingServer {
  url: string;
  close(): Promise<void>;
}

export async function quotingMcpServer(text: string, json: boolean): Promise<QuotingServer> {
  const http = createServer(async (req, res) => {
    if (req.method !== 'POST') return void res.writeHead(405).end();
    const server = new Server({ name: 'quoting', version: '1' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: ['quote', 'fail'].map((name) => ({ name, description: `Answers the test's text (${name}).`, inputSchema: { type: 'object' as const, properties: {} } })),
    }));
    server.setRequestHandler(CallToolRequestSchema, async (request) => {
      // A server error of its own (not a timeout, not a lost connection): final, so it is not retried.
      if (request.params.name === 'fail') throw new McpError(-32000, text);
      return { content: [{ type: 'text', text }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: json });
    res.on('close', () => void Promise.all([transport.close(), server.close()]));
    await server.connect(transport);
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    async close() {
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
