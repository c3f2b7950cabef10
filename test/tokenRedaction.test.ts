import { logger } from '../infra/logger';
import { call, useApi } from './support/stack';

const api = useApi();

describe('document transfer grants', () => {
  it('never reach the access log: the grant segment of an upload or download path is logged as {token}', async () => {
    const grant = 'g1.eyJkIjoiZG9jX3gifQ.c2lnbmF0dXJl';
    const info = jest.spyOn(logger, 'info');
    try {
      await call(api.url, 'GET', `/api/v2/documents/downloads/${grant}`);
      await call(api.url, 'PUT', `/api/v2/documents/uploads/${grant}`, { raw: 'bytes', headers: { 'content-type': 'application/octet-stream' } });
      const lines = info.mock.calls.filter(([fields]) => typeof fields === 'object' && (fields as { path?: string }).path?.startsWith('/api/v2/documents/'));
      expect(lines.map(([fields]) => (fields as { path: string }).path)).toEqual(['/api/v2/documents/downloads/{token}', '/api/v2/documents/uploads/{token}']);
      expect(JSON.stringify(info.mock.calls)).not.toContain(grant);
    } finally {
      info.mockRestore();
    }
  });
});
