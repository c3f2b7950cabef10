import { db } from '../sequelize';
import { Agent, AgentVersion } from './agent';
import { ApiKey } from './apiKey';
import { Conversation, Message } from './conversation';
import { Document } from './document';
import { IdempotencyKey } from './idempotencyKey';
import { KnowledgeCollection } from './knowledgeCollection';
import { Partner } from './partner';
import { Run } from './run';
import { Workspace } from './workspace';

export { Agent, AgentVersion, ApiKey, Conversation, Document, IdempotencyKey, KnowledgeCollection, Message, Partner, Run, Workspace };

let ready = false;

/** Binds every model to the process's pool; call before the first query. */
export function models(): void {
  if (ready) return;
  const sequelize = db();
  for (const model of [Partner, Workspace, ApiKey, Agent, AgentVersion, Conversation, Message, Run, Document, KnowledgeCollection, IdempotencyKey]) {
    model.setup(sequelize);
  }
  ready = true;
}
