import * as yup from 'yup';
import { about } from '../../../contract/about';

const base64 = yup.string().matches(/^[A-Za-z0-9+/]*={0,2}$/, 'payload bytes must be base64').meta(about('Bytes, base64.'));

/** Temporal's remote codec protocol: payloads in proto3 JSON, bytes as base64. */
export const CodecRequest = {
  body: yup
    .object({
      payloads: yup
        .array(
          yup.object({
            metadata: yup
              .object()
              .test('bytes', 'metadata values must be base64', (m) => Object.values(m ?? {}).every((v) => typeof v === 'string' && base64.isValidSync(v)))
              .meta({ jsonSchema: { type: 'object', additionalProperties: { type: 'string', pattern: '^[A-Za-z0-9+/]*={0,2}$' } } }),
            data: base64,
          }),
        )
        .required()
        .max(1_000),
    })
    .required() as unknown as yup.Schema<{ payloads: { metadata?: Record<string, string>; data?: string }[] }>,
};
