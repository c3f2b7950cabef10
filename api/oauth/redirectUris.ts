const LOOPBACK = new Set(['127.0.0.1', '[::1]', 'localhost']);

type MetadataError = new (description: string) => Error;

/**
 * OAuth 2.1 §2.3.1 on top of oidc-provider's own checks (absolute, no fragment, native clients'
 * loopback and private-use schemes): a web client's redirect URIs are https, or http only on a
 * loopback address. Registration is open, so this is what keeps an authorization code off the wire.
 * Runs as extraClientMetadata's synchronous validator, whose errors answer invalid_redirect_uri.
 */
export function checkRedirectUris(InvalidClientMetadata: MetadataError) {
  return (_ctx: unknown, key: string, _value: unknown, metadata: { application_type?: string; redirect_uris?: unknown }): void => {
    if (key !== 'software_id' || (metadata.application_type ?? 'web') !== 'web' || !Array.isArray(metadata.redirect_uris)) return;
    for (const uri of metadata.redirect_uris) {
      const url = typeof uri === 'string' && URL.canParse(uri) ? new URL(uri) : undefined;
      if (url?.protocol === 'http:' && !LOOPBACK.has(url.hostname)) {
        throw new InvalidClientMetadata('redirect_uris must use https, or http only on a loopback address (127.0.0.1, [::1], localhost)');
      }
    }
  };
}
