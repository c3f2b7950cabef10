import * as yup from 'yup';
import type { AgentConfig, McpApproval } from '../domain/agents';
import { MAX_MCP_SERVERS, MCP_LABEL, MCP_LABEL_RULE } from '../domain/mcpTools';
import { SECRET_NAME } from '../domain/secrets';
import { config } from '../infra/config';
import { COLLECTION_NAME, COLLECTION_NAME_RULE } from '../domain/knowledge';
import { MAX_ACTION_TIMEOUT_S } from '../domain/actions';

// Plain http only where private targets are allowed (a local test receiver), never in production.
// Any URL the WHATWG parser accepts (IPv6 literals included); whether its address may be reached is
// decided when the tool connects (infra/outboundTarget.ts), not here.
const targetUrl = (field: string) =>
  yup
    .string()
    .required()
    .test('url', `tool ${field} must be a valid URL`, (url) => url === undefined || URL.canParse(url))
    .test('https', `tool ${field} must be https`, (url) => url === undefined || url.startsWith('https://') || (config().webhookAllowPrivateTargets && url.startsWith('http://')));

const TOOL_NAME = yup.string().required().matches(/^[a-zA-Z0-9_-]{1,64}$/, 'tool name must be 1-64 letters, digits, _ or -');
const functionTool = { type: yup.string().oneOf(['http'], 'tool type must be http or handoff').required(), name: TOOL_NAME, description: yup.string(), parameters: yup.object() };

const handoffTool = yup.object({ type: yup.string().oneOf(['handoff']).required(), name: TOOL_NAME.notRequired(), description: yup.string() }).noUnknown().strict();
/** A tool the caller runs (domain/actions.ts): no URL, and no approval (the caller decides by running it or not). */
const clientTool = yup.object({ ...functionTool, runs_on: yup.string().oneOf(['client']).required() }).noUnknown().strict();
const httpTool = yup
  .object({
    ...functionTool,
    url: targetUrl('url'),
    // `client` is the client tool's schema (toolSchema); anything else but `service` is refused here.
    runs_on: yup.string().oneOf(['service'], 'tool runs_on must be service or client'),
    approval: yup.string().oneOf(['required'], 'tool approval must be required when given'),
  })
  .noUnknown()
  .strict();

const APPROVALS = ['required', 'never'] as const;
/** A remote MCP server (domain/mcpTools.ts); its credential is a workspace secret's name, never a token itself. */
const mcpTool = yup
  .object({
    type: yup.string().oneOf(['mcp']).required(),
    server_label: yup.string().required().matches(MCP_LABEL, MCP_LABEL_RULE),
    server_url: targetUrl('server_url'),
    allowed_tools: yup.array(yup.string().required().min(1).max(128)).max(128),
    approval: yup.mixed<McpApproval>().test('approval', 'approval must be "required", "never" or {"tools":{"<tool>":"required"|"never"}}', (value) => {
      if (value === undefined || (typeof value === 'string' && (APPROVALS as readonly string[]).includes(value))) return true;
      if (typeof value !== 'object' || value === null || Array.isArray(value) || Object.keys(value).join() !== 'tools') return false;
      const tools = (value as { tools: unknown }).tools;
      return typeof tools === 'object' && tools !== null && !Array.isArray(tools) && Object.values(tools).every((v) => (APPROVALS as readonly string[]).includes(v as string));
    }),
    credential: yup.string().matches(SECRET_NAME, 'credential must name a workspace secret: 1 to 64 letters, digits, "_", "." or "-"'),
  })
  .noUnknown()
  .strict();

const toolSchema = yup.lazy((tool: { type?: string; runs_on?: string } | undefined) =>
  tool?.type === 'handoff' ? handoffTool : tool?.type === 'mcp' ? mcpTool : tool?.runs_on === 'client' ? clientTool : httpTool,
);

const mcpLabels = (tools: unknown[] | undefined) => (tools ?? []).flatMap((tool) => (tool && typeof tool === 'object' && 'server_label' in tool ? [String(tool.server_label)] : []));

/** Collections an agent retrieves from, at most. */
const MAX_AGENT_COLLECTIONS = 20;

/** An agent's configuration: what callers may not send comes only from here. */
export const agentConfigSchema = yup
  .object({
    instructions: yup.string().max(100_000),
    model: yup.string().max(200),
    temperature: yup.number().min(0).max(2),
    tools: yup
      .array(toolSchema)
      .test('labels', 'two mcp tools have the same server_label', (tools) => {
        const labels = mcpLabels(tools);
        return new Set(labels).size === labels.length;
      })
      // Each is listed at every run's start and counted in every call's prompt.
      .test('servers', `an agent has at most ${MAX_MCP_SERVERS} mcp tools (servers)`, (tools) => mcpLabels(tools).length <= MAX_MCP_SERVERS),
    knowledge: yup
      .object({
        collections: yup.array(yup.string().required().matches(COLLECTION_NAME, COLLECTION_NAME_RULE)).max(MAX_AGENT_COLLECTIONS),
        policy: yup.string().oneOf(['auto', 'none', 'required']),
      })
      .noUnknown()
      .strict(),
    memory: yup.object({ enabled: yup.boolean(), max_messages: yup.number().integer().min(0).max(200) }).noUnknown().strict(),
    max_output_tokens: yup.number().integer().min(1),
    action_timeout_seconds: yup.number().integer().min(1).max(MAX_ACTION_TIMEOUT_S),
  })
  .noUnknown(true, 'agent config has an unknown key: ${unknown}')
  .strict();

export function parseAgentConfig(value: unknown): AgentConfig {
  return agentConfigSchema.validateSync(value ?? {}) as AgentConfig;
}
