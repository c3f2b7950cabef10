import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { UNSEALED_METADATA_KEY } from '../domain/unsealed';
import { isSealed, open, seal } from './encryption';
import { reportUnopenable } from './unopenablePayloads';

const ENCODING = 'binary/encrypted';
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A payload that says only "nothing" (no details, no result): nothing to hide, and each activity's heartbeat is one. */
const isNothing = (payload: Payload) => !payload.data?.length && payload.metadata?.encoding !== undefined && decoder.decode(payload.metadata.encoding) === 'binary/null';

/**
 * Temporal's answer for sensitive data: every payload (workflow and activity inputs and results) leaves
 * the process sealed with AES-256-GCM, the key id in its metadata, so Temporal's history holds no
 * plaintext of a run. The API, the workers and the codec endpoint (the UI's and CLI's way to decode,
 * behind an operator token) share it. Payloads written before it existed decode as they are. The one
 * exception is what workflowClients/summaries.ts marks: the UI's summaries, which say what a workflow or
 * an activity is and hold no content, stay readable without the codec; and a payload of nothing
 * (binary/null), which holds none either, is not sealed: a call heartbeats every second.
 */
export const payloadCodec: PayloadCodec = {
  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) =>
      payload.metadata?.[UNSEALED_METADATA_KEY] || isNothing(payload)
        ? payload
        : { metadata: { encoding: encoder.encode(ENCODING) }, data: seal(temporal.api.common.v1.Payload.encode(payload).finish()) },
    );
  },
  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => {
      const encoding = payload.metadata?.encoding;
      if (!encoding || decoder.decode(encoding) !== ENCODING || !payload.data || !isSealed(payload.data)) return payload;
      return temporal.api.common.v1.Payload.decode(open(payload.data));
    });
  },
};

/** The service's own reads of payloads: one it cannot open is reported (the codec endpoint, a viewer, only answers 400). */
const reportingCodec: PayloadCodec = {
  encode: (payloads) => payloadCodec.encode(payloads),
  async decode(payloads: Payload[]): Promise<Payload[]> {
    try {
      return await payloadCodec.decode(payloads);
    } catch (err) {
      reportUnopenable(err);
      throw err;
    }
  },
};

/** The data converter every Temporal client and worker of the service uses. */
export const dataConverter = { payloadCodecs: [reportingCodec] };
