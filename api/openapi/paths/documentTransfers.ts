import { RedeemGrant } from '../../routes/documentTransfers/schema';
import { ref } from '../jsonSchema';
import { json, operation, type Method, type Resource } from '../operation';
import { DOCUMENT_BYTES } from './documents';

const TOKEN_ERRORS = ['authentication_error', 'permission_denied', 'rate_limited', 'document_not_found'] as const;
const TOKEN_TEXT = 'A token that is not ours or expired is 401 (and counts as a failed authentication of the client address); a token for the other purpose is 403; a document deleted since is 404.';

const upload = (method: Method) =>
  operation(method, {
    id: method === 'put' ? 'uploadDocument' : 'uploadDocumentByPost',
    summary: method === 'put' ? 'Upload a document\'s bytes' : 'Upload a document\'s bytes (POST, for clients that cannot PUT)',
    description: `Redeems an upload grant, once: the raw bytes (any content type), exactly the declared \`size_bytes\`. Longer is 413 at the first byte too many, shorter is 400; any refusal closes the connection. ${TOKEN_TEXT}`,
    tag: 'Document transfer',
    access: { credential: 'token' },
    request: RedeemGrant,
    // Raw bytes, read by the handler as they stream.
    body: { required: true, content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } },
    responses: { '200': json('The uploaded document.', ref('Document')) },
    errors: [...TOKEN_ERRORS, 'document_already_uploaded', 'document_upload_in_progress', 'payload_too_large'],
  });

export const documentTransfers: Resource = {
  paths: {
    '/api/v2/documents/uploads/{token}': { put: upload('put'), post: upload('post') },
    '/api/v2/documents/downloads/{token}': {
      get: operation('get', {
        id: 'downloadDocument',
        summary: 'Download a document\'s bytes by grant',
        description: `Redeems a download grant (any number of times until it expires). ${TOKEN_TEXT}`,
        tag: 'Document transfer',
        access: { credential: 'token' },
        request: RedeemGrant,
        responses: { '200': DOCUMENT_BYTES },
        errors: [...TOKEN_ERRORS, 'document_not_uploaded'],
      }),
    },
  },
};
