import { defaultPayloadConverter } from '@temporalio/common';
import { payloadCodec } from '../infra/payloadCodec';

const encoding = (p: { metadata?: Record<string, Uint8Array> | null }) => new TextDecoder().decode(p.metadata?.encoding ?? undefined);

describe('the payload codec', () => {
  it('seals a payload with content, and opens it again', async () => {
    const plain = defaultPayloadConverter.toPayload({ text: 'what the model said' });
    const [sealed] = await payloadCodec.encode([plain]);
    expect(encoding(sealed)).toBe('binary/encrypted');
    expect(Buffer.from(sealed.data!).toString()).not.toContain('what the model said');
    const [opened] = await payloadCodec.decode([sealed]);
    expect(defaultPayloadConverter.fromPayload(opened)).toEqual({ text: 'what the model said' });
  });

  it('leaves a payload of nothing (a heartbeat without details) as it is: it has nothing to hide', async () => {
    const nothing = defaultPayloadConverter.toPayload(undefined);
    expect(encoding(nothing)).toBe('binary/null');
    const [encoded] = await payloadCodec.encode([nothing]);
    expect(encoded).toBe(nothing);
    const [decoded] = await payloadCodec.decode([encoded]);
    expect(defaultPayloadConverter.fromPayload(decoded)).toBeUndefined();
  });

  it('seals an empty string, which is content (json/plain ""), not nothing', async () => {
    const [sealed] = await payloadCodec.encode([defaultPayloadConverter.toPayload('')]);
    expect(encoding(sealed)).toBe('binary/encrypted');
  });
});
