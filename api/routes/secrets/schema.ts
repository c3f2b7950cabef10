import * as yup from 'yup';
import { isSecretOrigin, isSecretValue, MAX_SECRET_BYTES, SECRET_NAME, SECRET_NAME_MESSAGE, SECRET_ORIGIN_MESSAGE, SECRET_VALUE_MESSAGE } from '../../../domain/secrets';
import { about } from '../../../contract/about';

// No message here may carry the value: yup's default ones print it (`…but the final value was: …`).
const secretParams = yup.object({
  name: yup.string().required(SECRET_NAME_MESSAGE).matches(SECRET_NAME, SECRET_NAME_MESSAGE).meta(about('The secret\'s name, as agent config names it (`credential`).')),
});

const putSecret = yup
  .object({
    value: yup
      .string()
      .typeError(SECRET_VALUE_MESSAGE)
      .nonNullable(SECRET_VALUE_MESSAGE)
      .required(SECRET_VALUE_MESSAGE)
      .test('bytes', SECRET_VALUE_MESSAGE, (v) => v === undefined || isSecretValue(v))
      .meta({
        jsonSchema: {
          maxLength: MAX_SECRET_BYTES,
          writeOnly: true,
          description: `The credential (a bearer token), at most ${MAX_SECRET_BYTES} bytes as UTF-8. Sealed at rest; never returned, logged or shown again.`,
        },
      }),
    // Required here: a member or key that may edit agents must not choose, by a first use, where a secret goes.
    origin: yup
      .string()
      .typeError(SECRET_ORIGIN_MESSAGE)
      .required(SECRET_ORIGIN_MESSAGE)
      .test('origin', SECRET_ORIGIN_MESSAGE, (v) => v === undefined || isSecretOrigin(v))
      .meta({
        jsonSchema: {
          format: 'uri',
          description: 'Where the secret is sent, and nowhere else: an origin (`https://host[:port]`, every path on it), or an origin and a path prefix ending in `/` (`https://host/tenant-a/`, only the server URLs under it). An agent whose server is elsewhere gets no token. Set the secret again to change it.',
        },
      }),
  })
  .noUnknown(true, 'unknown key: ${unknown} (a secret takes value and origin)')
  .strict();

/** PUT /api/v2/secrets/{name}: `{"value": …}`, setting the secret or replacing its value. */
export const PutSecret = { params: secretParams, body: putSecret };

/** DELETE /api/v2/secrets/{name}. */
export const DeleteSecret = { params: secretParams };
