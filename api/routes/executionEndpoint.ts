import type { Context, Middleware } from 'koa';
import type { Scope } from '../../domain/scopes';
import { execute, type ExecutionTarget } from '../execution';
import { authorize } from '../middleware/auth';
import { idempotent } from '../middleware/idempotent';
import type { AppState } from '../state';
import { parseExecutionRequest, type ExecutionRequest } from '../validation/runtimeInput';

type Ctx = Context & { state: AppState; params: Record<string, string> };

export interface ExecutionEndpoint {
  /** The endpoint's name for rate limits (tenant + endpoint) and idempotency key scoping. */
  endpoint: string;
  scope: Scope;
  /** Checks of the body particular to this endpoint, run with the shared validation (before auth). */
  check?(ctx: Ctx, request: ExecutionRequest): void;
  /** The agent and end user the request names, for their rate-limit dimensions; resolved later. */
  agent(ctx: Ctx): string | undefined | Promise<string | undefined>;
  endUser(ctx: Ctx): string | undefined | Promise<string | undefined>;
  /** What to run: the agent, and the conversation when there is one. */
  target(ctx: Ctx, request: ExecutionRequest): Promise<ExecutionTarget>;
}

/**
 * The pipeline of every execution endpoint, in DESIGN.md §4's order: validate → authenticate →
 * scope → rate limit → idempotency claim → resolve, gate and run (execute()).
 */
export function executionEndpoint(e: ExecutionEndpoint): Middleware<AppState>[] {
  return [
    async (ctx, next) => {
      const request = parseExecutionRequest(ctx.request.body);
      e.check?.(ctx as Ctx, request);
      ctx.state.execution = request;
      await next();
    },
    authorize({ scopes: [e.scope], endpoint: e.endpoint, agent: (ctx) => e.agent(ctx as Ctx), endUser: (ctx) => e.endUser(ctx as Ctx) }),
    idempotent({ endpoint: e.endpoint, marker: 'Idempotency-Replayed' }),
    async (ctx) => {
      const request = ctx.state.execution!;
      await execute(ctx, request, await e.target(ctx as Ctx, request));
    },
  ];
}
