/**
 * The scope registry: 47 names, matched exactly (no hierarchy, no wildcard). The first 21 are the
 * ones the spec names; the rest cover the endpoints it lists; `ops:` scopes are staff-only and are
 * never granted to customer keys.
 */
export const SCOPES = [
  // named by the spec
  'agents:run',
  'agents:read',
  'agent:preview',
  'responses:create',
  'reports:create',
  'extractions:read',
  'extractions:create',
  'documents:read',
  'documents:create',
  'jobs:create',
  'jobs:read',
  'jobs:cancel',
  'knowledge:read',
  'knowledge:write',
  'tools:read',
  'logs:read',
  'usage:read',
  'chat:read',
  'messages:read',
  'mcp:connect',
  'tenants:write',
  // chosen for the endpoints the spec lists
  'agents:write',
  'agents:publish',
  'conversations:create',
  'conversations:read',
  'conversations:delete',
  'messages:create',
  'reports:read',
  'documents:delete',
  'knowledge:delete',
  'tools:run',
  'chat:write',
  'billing:read',
  'tenants:read',
  'webhooks:read',
  'webhooks:write',
  'keys:read',
  'keys:write',
  // beyond the spec: runs on a schedule
  'schedules:read',
  'schedules:write',
  // beyond the spec: workspace secrets (credentials agents' tools use): list their names; set and delete them (no scope reads a value)
  'secrets:read',
  'secrets:write',
  // beyond the spec: decide on tool calls that wait for approval, without being able to run agents
  'actions:approve',
  // staff only
  'ops:read',
  'ops:write',
  'ops:billing',
  'ops:impersonate',
] as const;

export type Scope = (typeof SCOPES)[number];

const registry: ReadonlySet<string> = new Set(SCOPES);

export function isScope(value: string): value is Scope {
  return registry.has(value);
}

export function isStaffScope(scope: string): boolean {
  return scope.startsWith('ops:');
}

/** Every scope a customer (workspace or partner) key may carry: all but the staff's. */
export const CUSTOMER_SCOPES = SCOPES.filter((s) => !isStaffScope(s));

/** Scopes a customer (workspace or partner) key may carry; throws naming the first bad one. */
export function parseCustomerScopes(names: string[]): Scope[] {
  for (const name of names) {
    if (!isScope(name)) throw new Error(`unknown scope "${name}": not in the scope registry`);
    if (isStaffScope(name)) throw new Error(`scope "${name}" is staff-only and cannot be granted to a customer key`);
  }
  return [...new Set(names)] as Scope[];
}
