import { Type } from '@sinclair/typebox';
import { ACTION_TYPES } from './actionTypes';
import type { RunStatus } from './errors';
import { LIMIT_KEYS } from './limits';
import { anyValue, closed, constant, freeObject, integer, list, oneOf, oneOfValues, optional, publicId, ref, text, timestamp, type Static } from './shape';

/**
 * The run response object and its parts, declared once (domain/shape.ts): the types the service
 * builds them with (RunResponse and OutputItem in domain/runs.ts, Usage in domain/usage.ts,
 * RequiredCall and RequiredAction in domain/actions.ts) are these shapes' static types, and the
 * OpenAPI document shows these schemas (api/openapi/execution.ts), each part once, by name.
 */

/** Why a completed run's answer is unfinished: it stopped at the call's output cap, or the run at one of its limits (domain/limits.ts). */
export const INCOMPLETE_REASONS = ['max_output_tokens', ...LIMIT_KEYS] as const;
export type IncompleteReason = (typeof INCOMPLETE_REASONS)[number];

export const UsageShape = closed({ input_tokens: integer({ minimum: 0 }), output_tokens: integer({ minimum: 0 }), total_tokens: integer({ minimum: 0 }), cached_tokens: integer({ minimum: 0 }) });

export const OutputItemShape = oneOf([
  closed({ type: constant('text'), text: text() }),
  closed({ type: constant('json'), json: anyValue('Any JSON value: the validated structured output.'), text: optional(text()) }),
  closed({ type: constant('handoff'), text: text(), reason: optional(text()) }),
  closed({ type: constant('refusal'), refusal: text("The model's explanation of why it declined to answer.") }, 'The model declined: an answer like any other, never repaired and never a 422.'),
]);

export const RequiredCallShape = closed(
  {
    call_id: text("The model's id for the call: name it in the answer."),
    type: oneOfValues(ACTION_TYPES, '`approval`: answer with a `decision`; `client_tool`: run the tool and answer with its `output`.'),
    tool: text("The tool's name."),
    arguments: optional(text("The call's arguments, JSON text as the model wrote them: what an approval approves, what a client tool runs. Absent from agent.run.action_required (read the run).")),
    arguments_sha256: optional(text('The SHA-256 (hex) of `arguments`: approving names it, so a decision approves exactly the arguments it was shown. Absent for calls recorded before it existed.')),
    expires_at: timestamp("When the call is denied if no answer has come (the agent's `action_timeout_seconds`)."),
  },
  'A tool call the run waits on.',
);

export const RequiredActionShape = closed(
  { calls: list(ref<Static<typeof RequiredCallShape>>('RequiredCall'), { minItems: 1 }), submit_to: text('Where to answer: POST this path.') },
  'Present while a `running` run waits for people (docs: "Actions"): the calls it waits on. Absent otherwise.',
);

export const RunResponseShape = closed(
  {
    id: publicId('run'),
    status: ref<RunStatus>('RunStatus'),
    agent: text('The agent that ran.'),
    agent_version: integer({ description: 'Version of the agent that ran.' }),
    conversation: optional(publicId('conversation', 'Omitted by the stateless POST /api/v2/responses.')),
    output: list(ref<Static<typeof OutputItemShape>>('OutputItem')),
    usage: ref<Static<typeof UsageShape>>('Usage'),
    metadata: freeObject('Free-form, as sent.'),
    request_id: publicId('request'),
    trace_id: Type.String({ pattern: '^[0-9a-f]{32}$', description: 'W3C trace id.' }),
    required_action: optional(ref<Static<typeof RequiredActionShape>>('RequiredAction')),
    incomplete_details: optional(
      closed(
        { reason: oneOfValues(INCOMPLETE_REASONS) },
        'Beyond the spec: only on a completed run that is unfinished: its answer stopped at its output cap (`max_output_tokens`: the agent\'s, or the model\'s window), or the run ended at one of its limits (`max_tool_calls`, `max_model_calls`, `max_run_credits`, `max_output_tokens_total`; docs/api.md, "Budgets and limits"), keeping what the model said so far. OpenAI\'s shape; /v1 says `finish_reason: length` and `status: incomplete`.',
      ),
    ),
  },
  'The run response object.',
);
