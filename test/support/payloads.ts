import { execFileSync } from 'node:child_process';
import { defaultPayloadConverter } from '@temporalio/common';
import { payloadCodec } from '../../infra/payloadCodec';
import { TEMPORAL_CLI } from '../../workers/temporalDevServer';

/** A payload as Temporal's JSON writes it: metadata and data in base64. */
export type WirePayload = { metadata: Record<string, string>; data: string };

/** Every payload of a workflow's history, as Temporal stores it (read without the codec). */
export function storedPayloads(workflowId: string): WirePayload[] {
  return payloadsIn(JSON.parse(execFileSync(TEMPORAL_CLI, ['workflow', 'show', '--workflow-id', workflowId, '--address', process.env.TEMPORAL_ADDRESS!, '--output', 'json'], { encoding: 'utf8' })));
}

/** The payloads anywhere in a history in Temporal's JSON. */
export function payloadsIn(history: unknown): WirePayload[] {
  const found: WirePayload[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (!node || typeof node !== 'object') return;
    const record = node as Record<string, unknown>;
    if (record.metadata && typeof record.data === 'string') found.push(record as WirePayload);
    Object.values(record).forEach(walk);
  };
  walk(history);
  return found;
}

/** The payloads' bytes as text, all of them: what a reader of the raw history sees. */
export const plaintextOf = (payloads: WirePayload[]) => payloads.map((p) => Buffer.from(p.data, 'base64').toString('utf8')).join('\n');

/** The payloads opened as the workers open them (the codec, then the converter). */
export function openedPayloads(payloads: WirePayload[]): Promise<unknown[]> {
  return Promise.all(
    payloads.map(async (p) => {
      const metadata = Object.fromEntries(Object.entries(p.metadata).map(([k, v]) => [k, Buffer.from(v, 'base64')]));
      return defaultPayloadConverter.fromPayload((await payloadCodec.decode([{ metadata, data: Buffer.from(p.data, 'base64') }]))[0]);
    }),
  );
}
