import { SpanKind, type Attributes } from '@opentelemetry/api';
import { GENAI, AES, OPERATION, spanName } from '../domain/genaiSpans';
import { contentCaptured } from '../infra/genaiContent';
import { inSpan } from '../infra/tracing';

/** A tool call as its span names it: the model's call, the tool's name as the model called it, its arguments, an MCP tool's server. */
export interface TracedToolCall {
  callId: string;
  name: string;
  arguments?: string;
  server?: { server_label: string; server_url: string };
}

/**
 * One attempt of a service-run tool call as an `execute_tool {tool}` span of the GenAI conventions:
 * an HTTP tool's or an MCP server's (named by its label and address, its method `tools/call`), both
 * run here against another service's API (`extension`). Arguments and result only as
 * infra/genaiContent.ts allows.
 */
export function tracedTool(call: TracedToolCall, work: () => Promise<string>): Promise<string> {
  const server = call.server && URL.canParse(call.server.server_url) ? new URL(call.server.server_url) : undefined;
  const attributes: Attributes = {
    [GENAI.operation]: OPERATION.tool,
    [GENAI.toolName]: call.name,
    [GENAI.toolCallId]: call.callId,
    [GENAI.toolType]: 'extension',
    ...(call.server && { [AES.mcpServerLabel]: call.server.server_label, [GENAI.mcpMethod]: 'tools/call' }),
    ...(server && { [GENAI.serverAddress]: server.hostname, ...(server.port && { [GENAI.serverPort]: Number(server.port) }) }),
    ...(contentCaptured() && call.arguments !== undefined && { [GENAI.toolArguments]: call.arguments }),
  };
  return inSpan(spanName(OPERATION.tool, call.name), { kind: SpanKind.INTERNAL, attributes }, async (span) => {
    const result = await work();
    if (contentCaptured()) span.setAttribute(GENAI.toolResult, result);
    return result;
  });
}
