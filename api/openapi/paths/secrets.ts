import { MAX_SECRET_BYTES, Secret, SecretDeleted, SecretList, SECRETS_PER_WORKSPACE } from '../../../domain/secrets';
import { DeleteSecret, PutSecret } from '../../routes/secrets/schema';
import { ref } from '../jsonSchema';
import { json, operation, type Resource } from '../operation';

const access = (scope: 'secrets:read' | 'secrets:write') => ({ credential: 'workspace' as const, scopes: [scope] as [typeof scope] });

export const secrets: Resource = {
  schemas: { Secret },
  paths: {
    '/api/v2/secrets': {
      get: operation('get', {
        id: 'listSecrets',
        summary: 'List secrets',
        description: 'Every secret of the workspace, by name: names and times, never a value. Beyond the spec.',
        tag: 'Secrets',
        access: access('secrets:read'),
        responses: { '200': json('The workspace\'s secrets.', SecretList) },
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
        responses: { '200': json('Deleted.', SecretDeleted) },
        errors: ['secret_not_found'],
      }),
    },
  },
};
