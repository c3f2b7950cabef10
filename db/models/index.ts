import { db } from '../sequelize';
import { Agent, AgentVersion } from './agent';
import { ApiKey } from './apiKey';
import { Conversation, Message } from './conversation';
import { Document } from './document';
import { IdempotencyKey } from './idempotencyKey';
import { KnowledgeCollection } from './knowledgeCollection';
import { LedgerLine } from './ledgerLine';
import { OutboxEvent } from './outboxEvent';
import { Partner } from './partner';
import { Run } from './run';
import { RunLog } from './runLog';
import { Workspace } from './workspace';

export { Agent, AgentVersion, ApiKey, Conversation, Document, IdempotencyKey, KnowledgeCollection, LedgerLine, Message, OutboxEvent, Partner, Run, RunLog, Workspace };

let ready = false;

/** Binds every model to the process's pool; call before the first query. */
export function models(): void {
  if (ready) return;
  const sequelize = db();
  for (const model of [Partner, Workspace, ApiKey, Agent, AgentVersion, Conversation, Message, Run, LedgerLine, OutboxEvent, RunLog, Document, KnowledgeCollection, IdempotencyKey]) {
    model.setup(sequelize);
  }
  ready = true;
}
