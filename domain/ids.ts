import { randomBytes } from 'node:crypto';
import { monotonicFactory } from 'ulid';

const ulid = monotonicFactory();

/** Public id prefixes: database keys never leave the service, these do. */
export const ID_PREFIX = {
  run: 'run_',
  conversation: 'conv_',
  message: 'msg_',
  job: 'job_',
  document: 'doc_',
  ingestion: 'ing_',
  report: 'rpt_',
  extraction: 'ext_',
  event: 'evt_',
  delivery: 'dlv_',
  webhookEndpoint: 'we_',
  request: 'req_',
  workspace: 'ws_',
  partner: 'ptn_',
  agent: 'agt_',
  key: 'key_',
  log: 'log_',
  collection: 'col_',
} as const;

export type IdKind = keyof typeof ID_PREFIX;

export function mintId(kind: IdKind): string {
  return ID_PREFIX[kind] + ulid().toLowerCase();
}

/** W3C trace id: 32 lowercase hex characters, never all zero. */
export function mintTraceId(): string {
  return randomBytes(16).toString('hex');
}

export function hasPrefix(kind: IdKind, value: string): boolean {
  return value.startsWith(ID_PREFIX[kind]);
}
