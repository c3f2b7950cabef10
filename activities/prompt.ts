import { instructionsOf, type AgentConfig } from '../domain/agents';
import type { Attachment, ResponseFormat } from '../domain/runs';
import type { ToolTurn } from '../domain/tools';
import { providerTurns } from '../domain/callIds';
import { knowledgeContext, type Passage } from '../domain/knowledge';
import { CUT_OFF_PROBLEM } from '../domain/structuredOutput';
import type { ChatMessage } from './providers/types';

export interface PromptParts {
  config: AgentConfig;
  input: string | Record<string, unknown>;
  attachments: Attachment[];
  history: ChatMessage[];
  format: ResponseFormat;
  /** Tool calls made so far in this run and their results. */
  toolTurns?: ToolTurn[];
  /** The rejected reply and what was wrong with it, for the one repair attempt. */
  repair?: { previous: string; problems: string[] };
  /** Retrieved passages: a labelled message of their own, never part of the instructions. */
  knowledge?: Passage[];
  /** A /v1 caller's own system or developer messages: a system message after the agent's, which come first. */
  callerInstructions?: string;
}

const TASK_LINE = 'Task: handle the structured input below as your instructions describe.';

function formatInstruction(format: ResponseFormat): string | undefined {
  if (format.type === 'json_object') return 'Reply with a single JSON object and nothing else.';
  if (format.type === 'json_schema') {
    return `Reply with a single JSON object that matches this JSON Schema, and nothing else:\n${JSON.stringify(format.schema)}`;
  }
  return undefined;
}

/**
 * The user's turn. A structured payload goes here, fenced and labelled, and never into the system
 * message: it is data supplied by the caller, not instructions.
 */
export function userContent(input: string | Record<string, unknown>, attachments: Attachment[]): string {
  const body = typeof input === 'string' ? input : `${TASK_LINE}\n\nInput (JSON):\n\`\`\`json\n${JSON.stringify(input, null, 2)}\n\`\`\``;
  if (attachments.length === 0) return body;
  const listed = attachments.map((a) => `- ${a.name ?? a.ref} (${[a.type, a.mime_type].filter(Boolean).join(', ') || 'file'}; ref ${a.ref})`);
  return `${body}\n\nAttachments:\n${listed.join('\n')}`;
}

/**
 * The one place prompts are put together: system from the agent version (or the default instructions), then history, then the
 * retrieved knowledge (data, labelled as such, in a message of its own), then the turn.
 */
export function assemblePrompt(parts: PromptParts): ChatMessage[] {
  const system = [instructionsOf(parts.config), formatInstruction(parts.format)].filter(Boolean).join('\n\n');
  const messages: ChatMessage[] = [{ role: 'system', content: system }];
  if (parts.callerInstructions) messages.push({ role: 'system', content: parts.callerInstructions });
  messages.push(...parts.history);
  if (parts.knowledge?.length) messages.push({ role: 'user', content: knowledgeContext(parts.knowledge) });
  messages.push({ role: 'user', content: userContent(parts.input, parts.attachments) }, ...providerTurns(parts.toolTurns ?? []));
  if (parts.repair?.problems.includes(CUT_OFF_PROBLEM)) {
    messages.push({ role: 'user', content: 'Your previous reply ran past the output limit and was cut off. Reply again with one complete JSON object, kept short.' });
  } else if (parts.repair) {
    messages.push(
      { role: 'assistant', content: parts.repair.previous },
      { role: 'user', content: `That reply did not match the required format:\n${parts.repair.problems.join('\n')}\nReply again with only the corrected JSON object.` },
    );
  }
  return messages;
}
