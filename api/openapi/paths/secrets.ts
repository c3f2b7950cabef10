import { MAX_SECRET_BYTES, SECRET_NAME, SECRETS_PER_WORKSPACE } from '../../../domain/secrets';
import { DeleteSecret, PutSecret } from '../../routes/secrets/schema';
import { closed, constant, orNull, ref, string, timestamp } from '../jsonSchema';
import { json, operation, type Resource } from '../operation';

const access = (scope: 'secrets:read' | 'secrets:write') => ({ credential: 'workspace' as const, scopes: [scope] as [typeof scope] });

export const secrets: Resource = {
  schemas: {
    Secret: closed(
      {
        object: constant('secret'),
        name: string({ pattern: SECRET_NAME.source }),
        origin: orNull(string({ format: 'uri', description: 'Where the secret is sent: an origin (every path on it) or an origin and a path prefix ending in `/` (the server URLs under it); given when it was set, or its first use\'s origin and path up to its last `/`; null until then.' })),
        created_at: timestamp(),
        updated_at: timestamp('When its value was last set.'),
      },
      { description: 'A workspace secret as every answer shows it: its name and times, never its value.' },
    ),
  },
  paths: {
    '/api/v2/secrets': {
      get: operation('get', {
        id: 'listSecrets',
        summary: 'List secrets',
        description: 'Every secret of the workspace, by name: names and times, never a value. Beyond the spec.',
        tag: 'Secrets',
        access: access('secrets:read'),
        responses: { '200': json('The workspace\'s secrets.', closed({ object: constant('list'), data: { type: 'array', items: ref('Secret') }, has_more: { type: 'boolean', const: false } })) },
      }),
    },
    '/api/v2/secrets/{name}': {
      put: operation('put', {
        id: 'putSecret',
        summary: 'Set a secret',
        description: `Sets the workspace's secret \`name\` (a credential an agent's tools use, such as an MCP server's bearer token, named in agent config by \`credential\`), or replaces its value. A workspace holds at most ${SECRETS_PER_WORKSPACE} (409 \`secret_limit_reached\` for a new name past that). The value (at most ${MAX_SECRET_BYTES} bytes) is sealed at rest (AES-256-GCM) and never returned, logged or put in an error message. Beyond the spec.`,
        tag: 'Secrets',
        access: access('secrets:write'),
        request: PutSecret,
        errors: ['secret_limit_reached'],
        responses: { '200': json('The secret (without its value).', ref('Secret')) },
      }),
      delete: operation('delete', {
        id: 'deleteSecret',
        summary: 'Delete a secret',
        description: 'Tools that name it stop authenticating with it. Another workspace\'s secret answers like a missing one. Beyond the spec.',
        tag: 'Secrets',
        access: access('secrets:write'),
        request: DeleteSecret,
        responses: { '200': json('Deleted.', closed({ object: constant('secret'), name: string(), deleted: { type: 'boolean', const: true } })) },
        errors: ['secret_not_found'],
      }),
    },
  },
};
