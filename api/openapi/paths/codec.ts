import { CodecRequest } from '../../routes/codec/schema';
import { closed, string, type JsonSchema } from '../jsonSchema';
import { json, operation, type Resource } from '../operation';

const base64 = string({ pattern: '^[A-Za-z0-9+/]*={0,2}$', description: 'Bytes, base64.' });
/** Temporal's remote codec protocol: payloads in proto3 JSON (the request's are CodecRequest). */
const payloads: JsonSchema = {
  type: 'object',
  required: ['payloads'],
  properties: { payloads: { type: 'array', maxItems: 1000, items: closed({ metadata: { type: 'object', additionalProperties: base64 }, data: base64 }) } },
  additionalProperties: false,
};

const direction = (name: 'decode' | 'encode') =>
  operation('post', {
    id: `${name}Payloads`,
    summary: name === 'decode' ? 'Decode payloads (Temporal remote codec)' : 'Encode payloads (Temporal remote codec)',
    description: `Temporal's remote codec protocol, so an operator's Temporal UI or CLI (\`--codec-endpoint …/codec\`) ${name === 'decode' ? 'shows the plaintext of' : 'seals'} payloads, which Temporal stores sealed (AES-256-GCM). Browsers are let in from \`CODEC_ALLOWED_ORIGINS\`. Off (501) without \`CODEC_OPERATOR_TOKEN\`.`,
    tag: 'Operations',
    access: { credential: 'operator' },
    request: CodecRequest,
    responses: { '200': json('The payloads, in order.', payloads) },
    errors: ['authentication_error', 'rate_limited', 'not_implemented'],
  });

export const codec: Resource = {
  paths: { '/codec/decode': { post: direction('decode') }, '/codec/encode': { post: direction('encode') } },
};
