import { boolean, closed, constant, integer, orNull, publicId, text, timestamp, type Static } from './shape';

/**
 * An agent as callers see it (never its configuration), declared once for its view and the OpenAPI
 * document. Apart from domain/agents.ts, which the run workflow imports: the workflow bundle takes
 * neither TypeBox nor the ids' node:crypto.
 */
export interface AgentView {
  public_id: string;
  name: string;
  status: string;
  published_version: number | null;
  draft_changed: boolean;
  created_at: Date;
  updated_at: Date;
}

export const Agent = closed(
  {
    id: publicId('agent'),
    object: constant('agent'),
    name: text(),
    status: text('`active`, `draft`, `paused`, `preview` or `archived`.'),
    published_version: orNull(integer({ description: 'The version runs use; null before the first publish.' })),
    draft_changed: boolean('Whether the draft differs from the published version.'),
    created_at: timestamp(),
    updated_at: timestamp(),
  },
  'An agent as callers see it: never its configuration.',
);

export function agentObject(a: AgentView): Static<typeof Agent> {
  return {
    id: a.public_id,
    object: 'agent',
    name: a.name,
    status: a.status,
    published_version: a.published_version,
    draft_changed: a.draft_changed,
    created_at: a.created_at.toISOString(),
    updated_at: a.updated_at.toISOString(),
  };
}
