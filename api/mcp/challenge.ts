import { ServiceError } from '../../domain/errors';
import { wwwAuthenticate } from '../oauth/resources';

/** A 403 whose challenge names every scope the request needs (RFC 6750 insufficient_scope), in one header. */
export function insufficientScope(scopes: string[], message: string): ServiceError {
  return new ServiceError('permission_denied', message, { 'WWW-Authenticate': wwwAuthenticate('mcp', { error: 'insufficient_scope', scope: scopes }) });
}
