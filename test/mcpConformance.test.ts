import { execFile } from 'node:child_process';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { resetConfig } from '../infra/config';
import { tenant, useApi } from './support/stack';

const api = useApi();
const run = promisify(execFile);

/**
 * The official conformance suite's server scenarios that apply to this transport (docs/mcp-oauth.md, "MCP").
 * The others test what the spec deliberately leaves out (resources, prompts, logging, completion,
 * sampling, elicitation, event streams) or call the reference server's own test tools.
 */
const SCENARIOS = ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection'];
const CLI = path.join(__dirname, '..', 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');

/**
 * The suite has no option for a credential: it talks to this forwarder, which adds the bearer key as
 * an MCP client's configuration would, and passes everything else (Host and Origin included) through.
 */
function forwarder(target: string, key: string): Promise<Server> {
  const upstream = new URL(target);
  const server = createServer((req, res) => {
    const out = request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: { ...req.headers, authorization: `Bearer ${key}` } }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on('error', () => res.writeHead(502).end());
    req.pipe(out);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

describe('the MCP conformance suite (@modelcontextprotocol/conformance)', () => {
  it.each(SCENARIOS)('%s passes every check', async (scenario) => {
    const t = await tenant({ scopes: ['mcp:connect', 'agents:read'] });
    const proxy = await forwarder(api.url, t.key);
    const port = (proxy.address() as AddressInfo).port;
    // The deployment's own origins are configured, as an operator would: the suite checks that they pass and others do not.
    process.env.MCP_ALLOWED_ORIGINS = `http://localhost:${port},http://127.0.0.1:${port}`;
    resetConfig();
    try {
      const url = `http://localhost:${port}/mcp`;
      const { stdout } = await run(process.execPath, [CLI, 'server', '--url', url, '--scenario', scenario], { env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' } }).catch((err: { stdout: string; stderr: string }) => {
        throw new Error(`conformance ${scenario} failed:\n${err.stdout}\n${err.stderr}`);
      });
      const summary = /Passed: (\d+)\/(\d+), (\d+) failed/.exec(stdout);
      expect(summary).not.toBeNull();
      expect(summary![3]).toBe('0');
      expect(Number(summary![1])).toBeGreaterThan(0);
    } finally {
      delete process.env.MCP_ALLOWED_ORIGINS;
      resetConfig();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });
});
