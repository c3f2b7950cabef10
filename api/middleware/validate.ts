import type { Context, Next } from 'koa';
import { invalidRequest } from '../../domain/errors';
import { parse, type Input, type Schemas } from '../../contract/parse';
import { unstorableTextAt } from '../../contract/storableText';
import type { AppState } from './state';

type Ctx = Context & { state: AppState; params?: Record<string, string> };

/**
 * The validation step of every endpoint: parses the declared parts (body, query, path parameters,
 * headers) with their schemas into `ctx.state.input`, which is all the handler reads. It runs before
 * authentication: a malformed request is a 400 before any credential is looked at (spec: checked "at
 * parse, before authorization"). `refine` states rules that span parts (an id in the body and the path).
 */
export function validate<S extends Schemas>(schemas: S, refine?: (input: Input<S>) => void) {
  const middleware = async (ctx: Ctx, next: Next): Promise<void> => {
    const parts = { body: ctx.request.body, query: ctx.query, params: ctx.params ?? {}, headers: ctx.headers } as const;
    const input: Record<string, unknown> = {};
    for (const part of ['body', 'query', 'params', 'headers'] as const) {
      const parser = schemas[part];
      if (!parser) continue;
      const unstorable = unstorableTextAt(parts[part]);
      if (unstorable !== undefined) {
        const where = part === 'params' ? 'path' : part;
        throw invalidRequest(`${unstorable ? `${unstorable} (in the request ${where})` : `The request ${where}`} has text with a NUL character or invalid Unicode (an unpaired surrogate).`);
      }
      input[part] = parse(parser, parts[part]);
    }
    refine?.(input as Input<S>);
    ctx.state.input = input;
    await next();
  };
  // test/openapi.test.ts holds each route's schemas to the ones its operation documents.
  return Object.assign(middleware, { schemas });
}
