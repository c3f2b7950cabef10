import type { ModelStatic, Model, WhereOptions } from 'sequelize';
import { ServiceError, type ErrorCode } from '../domain/errors';

const NOT_FOUND_MESSAGE: Partial<Record<ErrorCode, string>> = {
  agent_not_found: 'No such agent.',
  conversation_not_found: 'No such conversation.',
  run_not_found: 'No such run.',
};

export function notFound(code: ErrorCode): ServiceError {
  return new ServiceError(code, NOT_FOUND_MESSAGE[code] ?? 'Not found.');
}

/**
 * A lookup of a public id scoped to the caller's workspace, so another workspace's resource and a
 * missing one are the same 404, byte for byte. The hot path's prepared statements (the agent an
 * execution names) scope by workspace the same way and answer with notFound().
 */
export async function findInWorkspace<M extends Model & { workspaceId: number; publicId: string }>(
  model: ModelStatic<M>,
  workspaceId: number,
  publicId: string,
  code: ErrorCode,
): Promise<M> {
  const found = await model.findOne({ where: { publicId, workspaceId } as WhereOptions<M> });
  if (!found) throw notFound(code);
  return found;
}
