import Router from '@koa/router';
import type { RunResponse } from '../../../domain/runs';
import { checkDeclaredTools } from '../../openai/declaredTools';
import { continueRun, execute } from '../../execution';
import type { Context } from 'koa';
import { authorize, workspaceOf } from '../../middleware/auth';
import { idempotent } from '../../middleware/idempotent';
import { validate, type Input } from '../../middleware/validate';
import { chatChunks, chatCompletion, chatExecutionRequest, chatOptions, toolOutputsOf } from '../../openai/chatCompletions';
import { agentOfModel } from '../../openai/models';
import type { AppState } from '../../state';
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
        await continueRun(ctx, answered.runId, answered.outputs, options, { wire });
        if (!wire) answerAsCompletion(ctx, body.model);
        return;
      }
      const request = chatExecutionRequest(body);
      if (wire) return execute(ctx, request, { kind: 'response', agentPublicId }, { wire });
      await execute(ctx, request, { kind: 'response', agentPublicId });
      answerAsCompletion(ctx, body.model);
    },
  );
}

/** The run's answer as a chat completion; a run waiting on its caller's tools answers with its calls, which the caller runs and answers. */
function answerAsCompletion(ctx: Context & { state: AppState }, model: string): void {
  if (ctx.status === 200 || (ctx.status === 202 && (ctx.body as RunResponse).required_action)) {
    ctx.status = 200;
    ctx.body = chatCompletion(ctx.body as RunResponse, model);
  }
}
