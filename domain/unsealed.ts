/**
 * The payload metadata that tells the codec (infra/payloadCodec.ts) to leave a payload as it is:
 * what workflowClients/summaries.ts marks, the Temporal UI's summaries. Here, below both, as the workflow
 * bundle may not reach the codec's code.
 */
export const UNSEALED_METADATA_KEY = 'aes-unsealed';
