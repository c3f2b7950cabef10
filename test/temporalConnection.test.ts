import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { temporalConnectionOptions } from '../infra/temporalConnection';

const dir = mkdtempSync(path.join(tmpdir(), 'temporal-tls-'));
const file = (name: string, text: string) => {
  const at = path.join(dir, name);
  writeFileSync(at, text);
  return at;
};
const crt = file('client.crt', 'CERT');
const key = file('client.key', 'KEY');
const ca = file('ca.pem', 'CA');

describe('Temporal connection options (the API and the workers alike)', () => {
  it('is a plain connection to the dev server by default', () => {
    expect(temporalConnectionOptions({})).toEqual({ address: '127.0.0.1:7233' });
  });

  it('uses mutual TLS with a client certificate, a server CA and a server name', () => {
    const options = temporalConnectionOptions({ TEMPORAL_ADDRESS: 'temporal.internal:7233', TEMPORAL_TLS_CERT: crt, TEMPORAL_TLS_KEY: key, TEMPORAL_TLS_CA: ca, TEMPORAL_TLS_SERVER_NAME: 'temporal' });
    expect(options).toEqual({
      address: 'temporal.internal:7233',
      tls: { serverNameOverride: 'temporal', serverRootCACertificate: Buffer.from('CA'), clientCertPair: { crt: Buffer.from('CERT'), key: Buffer.from('KEY') } },
    });
  });

  it('sends an API key over TLS with the system roots (Temporal Cloud)', () => {
    expect(temporalConnectionOptions({ TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233', TEMPORAL_API_KEY: 'secret' })).toEqual({ address: 'ns.acct.tmprl.cloud:7233', tls: {}, apiKey: 'secret' });
    expect(temporalConnectionOptions({ TEMPORAL_TLS: 'true' })).toEqual({ address: '127.0.0.1:7233', tls: {} });
  });

  it('refuses a certificate without its key, and a file it cannot read, naming the variable', () => {
    expect(() => temporalConnectionOptions({ TEMPORAL_TLS_CERT: crt })).toThrow('TEMPORAL_TLS_KEY');
    expect(() => temporalConnectionOptions({ TEMPORAL_TLS_CA: path.join(dir, 'missing.pem') })).toThrow('TEMPORAL_TLS_CA');
  });
});
