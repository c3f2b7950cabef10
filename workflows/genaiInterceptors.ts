import { context, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import {
  defaultPayloadConverter,
  workflowInfo,
  type ActivityInput,
  type Next,
  type WorkflowExecuteInput,
  type WorkflowInboundCallsInterceptor,
  type WorkflowInterceptorsFactory,
  type WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import { AES, CONTENT_HEADER, GENAI, OPERATION, PROVIDER, spanName } from '../domain/genaiSpans';
import type { RunInput, RunOutcome } from '../domain/runs';

/**
 * The traced bundle's own workflow interceptors (workers/workflowBundle.ts), after Temporal's
 * OpenTelemetry ones: an agent run is an `invoke_agent {agent}` span of the GenAI conventions, a
 * child of Temporal's RunWorkflow span, and every activity the run schedules starts under it, so its
 * model, tool and retrieval spans, made by whichever worker runs them, are its descendants in the
 * run's trace. The activities of a run whose exchange the service keeps carry CONTENT_HEADER: only
 * their spans may hold its text. Spans are no commands: the workflow's history is the same.
 */
export const interceptors: WorkflowInterceptorsFactory = () => {
  const run: { input?: RunInput } = {};
  return { inbound: [new AgentSpan(run)], outbound: [new ContentHeader(run)] };
};

class AgentSpan implements WorkflowInboundCallsInterceptor {
  constructor(private readonly run: { input?: RunInput }) {}

  async execute(input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    if (workflowInfo().workflowType !== 'agentRun') return next(input);
    const run = (this.run.input = input.args[0] as RunInput);
    const span = trace.getTracer('agent-execution-service').startSpan(spanName(OPERATION.agent, run.agent.name), {
      attributes: {
        [GENAI.operation]: OPERATION.agent,
        [GENAI.provider]: PROVIDER,
        [GENAI.agentId]: run.agent.publicId,
        [GENAI.agentVersion]: String(run.agent.version),
        ...(run.agent.name && { [GENAI.agentName]: run.agent.name }),
        ...(run.conversation && { [GENAI.conversationId]: run.conversation.publicId }),
        ...(run.agent.config.model && { [GENAI.requestModel]: run.agent.config.model }),
        [AES.runId]: run.runId,
      },
    });
    try {
      const outcome = (await context.with(trace.setSpan(context.active(), span), () => next(input))) as RunOutcome;
      if (outcome?.error) failed(span, outcome.error.code);
      return outcome;
    } catch (err) {
      failed(span, (err as Error)?.name ?? 'Error');
      throw err;
    } finally {
      span.end();
    }
  }
}

function failed(span: Span, type: string): void {
  span.setAttribute(GENAI.errorType, type);
  span.setStatus({ code: SpanStatusCode.ERROR });
}

class ContentHeader implements WorkflowOutboundCallsInterceptor {
  constructor(private readonly run: { input?: RunInput }) {}

  scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) {
    // A stateless /responses run keeps no copy of its exchange: none leaves in a span either.
    if (!this.run.input || this.run.input.kind === 'response') return next(input);
    return next({ ...input, headers: { ...input.headers, [CONTENT_HEADER]: defaultPayloadConverter.toPayload(true) } });
  }
}
