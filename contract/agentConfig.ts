import * as yup from 'yup';
import type { AgentConfig, McpApproval } from '../domain/agents';
import { MAX_MCP_SERVERS, MCP_LABEL, MCP_LABEL_RULE } from '../domain/mcpTools';
import { SECRET_NAME } from '../domain/secrets';
import { config } from '../infra/config';
import { COLLECTION_NAME, COLLECTION_NAME_RULE } from '../domain/knowledge';
import { MAX_ACTION_TIMEOUT_S } from '../domain/actions';
import { LIMIT_KEYS, MAX_LIMIT_VALUE } from '../domain/limits';
import { readModelName } from '../domain/modelRoutes';

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

/** Fallback models an agent names, at most: each is a call a failing provider's run may make instead. */
const MAX_FALLBACK_MODELS = 5;

/** The provider a model name names that this service has not (MODEL_PROVIDERS, read when the config is saved or published). */
function unknownProvider(name: string | undefined): string | undefined {
  if (name === undefined) return undefined;
  const { providers, declared } = config().modelProviders;
  const read = readModelName(name, { names: providers.map((p) => p.name), declared });
  return 'unknownProvider' in read ? read.unknownProvider : undefined;
}

const knownProvider = (where: string) =>
  function (this: yup.TestContext, name: string | undefined) {
    const unknown = unknownProvider(name);
    if (!unknown) return true;
    const names = config().modelProviders.providers.map((p) => p.name).join(', ');
    return this.createError({ message: `${where} names provider "${unknown}", which this service does not have (it has ${names}); a model whose own name has a '/' is written provider/model, as ${config().modelProviders.providers[0].name}/${name}` });
  };

const modelName = yup.string().max(200);

const positiveLimit = (key: string) =>
  yup.number().typeError(`limits.${key} must be a positive integer`).integer(`limits.${key} must be a positive integer`).min(1, `limits.${key} must be a positive integer`).max(MAX_LIMIT_VALUE, `limits.${key} must be at most ${MAX_LIMIT_VALUE}`);

/**
 * The run's budgets (domain/limits.ts). max_model_calls is bounded by the operator's ceiling
 * (RUN_MODEL_CALLS_MAX), read when the config is saved or published.
 */
const limitsSchema = yup
  .object({
    max_tool_calls: positiveLimit('max_tool_calls'),
    max_model_calls: positiveLimit('max_model_calls').test('ceiling', ({ value }) => `limits.max_model_calls may be at most ${config().runLimits.modelCallsCeiling} (this service's ceiling), got ${value}`, (value) => value === undefined || value <= config().runLimits.modelCallsCeiling),
    max_run_credits: positiveLimit('max_run_credits'),
    max_output_tokens_total: positiveLimit('max_output_tokens_total'),
  })
  .noUnknown(true, `limits has an unknown key: \${unknown}; it takes ${LIMIT_KEYS.join(', ')}`)
  .default(undefined)
  .strict();

/** An agent's configuration: what callers may not send comes only from here. */
export const agentConfigSchema = yup
  .object({
    instructions: yup.string().max(100_000),
    model: modelName.test('provider', knownProvider('model')),
    fallback_models: yup.array(modelName.required().test('provider', knownProvider('fallback_models'))).max(MAX_FALLBACK_MODELS),
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
    limits: limitsSchema,
  })
  .noUnknown(true, 'agent config has an unknown key: ${unknown}')
  .strict();

export function parseAgentConfig(value: unknown): AgentConfig {
  return agentConfigSchema.validateSync(value ?? {}) as AgentConfig;
}
