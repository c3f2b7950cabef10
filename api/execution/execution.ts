import type { Context } from 'koa';
import { ERROR_TABLE } from '../../domain/errors';
import { failureBody } from '../middleware/errorEnvelope';
import type { RunOptions } from '../../domain/runs';
import type { ActionAnswer } from '../../domain/actions';
import type { ExecutionRequest } from '../../contract/runtimeInput';
import { workspaceOf } from '../../callers/principal';
import type { RunRequester } from '../../planning/planRun';
import * as pipeline from '../../runs/execute';
import type { Answering, ExecutionTarget, RunAnswer, RunCaller } from '../../runs/execute';
import type { AppState } from '../middleware/state';
import { answerAccepted } from './answerAccepted';
import { streamRunEvents } from './eventStream';

type Ctx = Context & { state: AppState };

/** The authorized caller, as planRun sees it. */
export function requesterOf(state: AppState): RunRequester {
  return { workspace: workspaceOf(state.principal), scopes: state.principal!.scopes, requestId: state.requestId, traceId: state.traceId };
}

function callerOf(ctx: Ctx): RunCaller {
  return {
    principal: ctx.state.principal!,
    requester: requesterOf(ctx.state),
    recovery: ctx.state.recovery,
    noteRun(runId, traceId) {
      ctx.state.runId = runId;
      if (traceId) ctx.state.traceId = traceId;
    },
  };
}

/** Writes the pipeline's answer as HTTP. */
async function write(ctx: Ctx, answer: RunAnswer): Promise<void> {
  if (answer.kind === 'stream') return streamRunEvents(ctx, answer.handle, answer.relay);
  if (answer.kind === 'as_it_stands') {
    if (!answer.waiting) {
      ctx.body = answer.run;
      return;
    }
    // Not the request's outcome yet: idempotency does not store it, so a retry with the same key attaches to the run.
    ctx.state.provisional = true;
    answerAccepted(ctx, `/api/v2/runs/${answer.run.id}`, answer.run);
    return;
  }
  const { outcome } = answer;
  if (!outcome.error) {
    ctx.status = 200;
    ctx.body = outcome.run;
    return;
  }
  // The run's own request id, so every answer about one run (a resumed retry's too) is the same bytes.
  ctx.status = ERROR_TABLE[outcome.error.code].http;
  ctx.body = failureBody(ctx, outcome.error, outcome.run);
}

/** Runs the request through the run pipeline (runs/execute.ts) and answers it. */
export async function execute(ctx: Ctx, request: ExecutionRequest, target: ExecutionTarget, how?: Answering): Promise<void> {
  await write(ctx, await pipeline.execute(callerOf(ctx), request, target, how));
}

/** Answers a run's waiting calls (runs/execute.ts, continueRun), then answers the request from the run. */
export async function continueRun(ctx: Ctx, runId: string, outputs: ActionAnswer[], options: RunOptions, how?: Answering): Promise<void> {
  await write(ctx, await pipeline.continueRun(callerOf(ctx), runId, outputs, options, how));
}
