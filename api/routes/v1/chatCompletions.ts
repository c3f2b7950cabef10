import Router from '@koa/router';
import type { RunResponse } from '../../../domain/runs';
import { checkDeclaredTools } from '../../openai/declaredTools';
import { continueRun, execute } from '../../execution/execution';
import type { Context } from 'koa';
import { authorize } from '../../middleware/auth';
import { workspaceOf } from '../../../callers/principal';
import { idempotent } from '../../middleware/idempotent';
import { validate } from '../../middleware/validate';
import { type Input } from '../../../contract/parse';
import { chatChunks, chatCompletion, chatExecutionRequest, chatOptions, toolCallsOf, toolOutputsOf, waitingForApprover } from '../../openai/chatCompletions';
import { agentOfModel } from '../../openai/models';
import type { AppState } from '../../middleware/state';
import { CreateChatCompletion } from './schema';

/** POST /v1/chat/completions: a stateless run of the agent named by `model`, in OpenAI's wire shapes. */
export function chatCompletionsRoutes(router: Router<AppState>): void {
  router.post<{ input: Input<typeof CreateChatCompletion> }>(
    '/v1/chat/completions',
    validate(CreateChatCompletion),
    authorize({ scopes: ['responses:create'], endpoint: 'chat_completions', agent: (ctx) => ctx.state.input.body.model, endUser: (ctx) => ctx.state.input.body.user }),
    idempotent('Idempotency-Replayed'),
    async (ctx) => {
      const { body } = ctx.state.input;
      const workspace = workspaceOf(ctx.state.principal);
      const agentPublicId = await agentOfModel(workspace.id, body.model);
      await checkDeclaredTools(workspace.id, agentPublicId, (body.tools ?? []).map((t) => t.function.name));
      const options = chatOptions(body);
      const wire = options.stream ? chatChunks(() => ctx.state.runId ?? '', body.model, body.stream_options?.include_usage === true, options.responseFormat.type !== 'text') : undefined;
      // Tool messages that answer calls the service gave out continue that run: the caller ran the agent's client-run tools.
      const answered = toolOutputsOf(body.messages);
      if (answered) {
        await continueRun(ctx, answered.runId, answered.outputs, options, { wire, holdForApprovers: true });
        if (!wire) answerAsCompletion(ctx, body.model);
        return;
      }
      // Held while the run waits for an approver, as a stream is: a chat completion has no shape for the wait.
      await execute(ctx, chatExecutionRequest(body), { kind: 'response', agentPublicId }, { wire, holdForApprovers: true });
      if (!wire) answerAsCompletion(ctx, body.model);
    },
  );
}

/**
 * The run's answer as a chat completion; a run waiting on its caller's tools answers with its calls,
 * which the caller runs and answers. One still waiting for an approver when the wait ends is never
 * shown as an answer: it is an error naming the run.
 */
function answerAsCompletion(ctx: Context & { state: AppState }, model: string): void {
  const run = ctx.body as RunResponse;
  if (ctx.status === 202 && run.required_action && toolCallsOf(run).length === 0) throw waitingForApprover(run);
  if (ctx.status === 200 || (ctx.status === 202 && run.required_action)) {
    ctx.status = 200;
    ctx.body = chatCompletion(run, model);
  }
}
