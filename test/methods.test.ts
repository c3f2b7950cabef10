import { request } from 'node:http';
import { useApi } from './support/stack';

/** One request by node:http (fetch refuses TRACE): status, headers and the JSON body. */
function send(method: string, path: string): Promise<{ status: number; allow?: string; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request(`${api.url}${path}`, { method }, (res) => {
      let text = '';
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, allow: res.headers.allow, body: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.end();
  });
}

const api = useApi();

describe('methods', () => {
  it.each([
    ['TRACE', '/api/v2/responses', 'POST'],
    ['GET', '/api/v2/responses', 'POST'],
    ['DELETE', '/api/v2/runs/run_x', 'GET'],
    ['PUT', '/api/v2/agents/agt_x/runs', 'POST'],
  ])('%s on %s, a path that takes other methods, is 405 with Allow', async (method, path, allowed) => {
    const res = await send(method, path);
    expect(res.status).toBe(405);
    expect(res.allow?.split(', ')).toContain(allowed);
    expect(res.body.error).toMatchObject({ code: 'method_not_allowed', request_id: expect.stringMatching(/^req_/) });
  });

  it('a path no route has stays 501 not_implemented', async () => {
    const res = await send('TRACE', '/api/v2/nope');
    expect(res.status).toBe(501);
    expect(res.body.error.code).toBe('not_implemented');
  });
});
