import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import ipaddr from 'ipaddr.js';
import { Agent, fetch as undiciFetch } from 'undici';
import { config } from './config';

/**
 * Where the service may send a request on a customer's behalf (HTTP tools, partner webhooks): only
 * public unicast addresses. ipaddr.js names every special range (private, loopback, link-local,
 * unique-local, CGNAT, NAT64, 6to4, 0.0.0.0, …) and unwraps IPv4-mapped IPv6, so "not unicast" is
 * the whole rule. Checked when a target is registered and again at connection time, on the address
 * actually dialled, so a DNS answer that changes afterwards (rebinding) is caught too.
 */
export function forbiddenAddress(address: string): boolean {
  // In WHATWG's canonical form first: ipaddr.js reads ::1.2.3.4 as ::ffff:1.2.3.4, not as ::102:304.
  const canonical = address.includes(':') ? new URL(`http://[${address}]/`).hostname.slice(1, -1) : address;
  const literal = ipaddr.parse(canonical);
  // IPv4-compatible IPv6 (::a.b.c.d, deprecated) is "unicast" to ipaddr.js, yet some stacks dial it as the IPv4 inside.
  if (literal.kind() === 'ipv6' && (literal as ipaddr.IPv6).match(IPV4_COMPATIBLE)) return true;
  return ipaddr.process(canonical).range() !== 'unicast';
}

const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

/** The resolver, injectable so tests can answer as a rebinding DNS server would. */
export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) => dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))));

/** The error a refused address gives; callers treat it as final (retrying cannot help). */
export class TargetRefused extends Error {
  readonly code = 'ETARGETREFUSED';
}

const allowPrivate = () => config().webhookAllowPrivateTargets;

function literalHost(url: URL): string | undefined {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return ipaddr.isValid(host) ? host : undefined;
}

/**
 * A target as registered: https (plain http only where private targets are allowed, for local test
 * receivers), no credentials in the URL, and a host whose every address is public.
 */
export async function checkTarget(url: URL, resolve: Resolver = systemResolver): Promise<void> {
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && allowPrivate())) throw new TargetRefused('the URL must use https');
  if (url.username || url.password) throw new TargetRefused('the URL must not carry credentials');
  if (allowPrivate()) return;
  const literal = literalHost(url);
  let addresses: string[];
  if (literal) addresses = [literal];
  else {
    try {
      addresses = (await resolve(url.hostname)).map((a) => a.address);
    } catch {
      throw new TargetRefused(`the host ${url.hostname} does not resolve`);
    }
  }
  const blocked = addresses.find(forbiddenAddress);
  if (blocked || addresses.length === 0) throw new TargetRefused(`the host ${url.hostname} resolves to a non-public address${blocked ? ` (${blocked})` : ''}`);
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** The connection's own lookup: resolves, refuses a non-public answer, and dials only what it checked. */
function guardedLookup(resolve: Resolver) {
  return (hostname: string, options: { all?: boolean }, callback: LookupCallback): void => {
    resolve(hostname).then(
      (addresses) => {
        const blocked = addresses.find((a) => forbiddenAddress(a.address));
        if (blocked && !allowPrivate()) return callback(new TargetRefused(`refused target address ${blocked.address}`), '');
        if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '');
        return options.all ? callback(null, addresses) : callback(null, addresses[0].address, addresses[0].family);
      },
      (err: NodeJS.ErrnoException) => callback(err, ''),
    );
  };
}

export interface PostOptions {
  /** The whole exchange, connection to last byte, ends after this. */
  timeoutMs: number;
  /** Bytes of the answer kept; the rest is not read. */
  maxAnswerBytes: number;
  signal?: AbortSignal;
  resolve?: Resolver;
}

export interface PostAnswer {
  status: number;
  text: string;
  headers: http.IncomingHttpHeaders;
}

/** POSTs to a checked target; a non-public address, at any step, rejects with TargetRefused. */
export function postToTarget(url: URL, body: string | Buffer, headers: Record<string, string>, options: PostOptions): Promise<PostAnswer> {
  const literal = literalHost(url);
  // A literal address never reaches the lookup hook, so it is checked here.
  if (literal && forbiddenAddress(literal) && !allowPrivate()) return Promise.reject(new TargetRefused(`refused target address ${literal}`));
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.request(url, { method: 'POST', headers, lookup: guardedLookup(options.resolve ?? systemResolver) as never, signal: options.signal }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const answered = () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).subarray(0, options.maxAnswerBytes).toString('utf8'), headers: res.headers });
      };
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        size += chunk.length;
        // What is kept is there: the rest is not read (an endless answer would hold the call to its timeout).
        if (size >= options.maxAnswerBytes) {
          answered();
          res.destroy();
        }
      });
      res.on('end', answered);
      res.on('error', reject);
    });
    const timer = setTimeout(() => req.destroy(Object.assign(new Error(`no answer within ${options.timeoutMs} ms`), { code: 'ETIMEDOUT' })), options.timeoutMs);
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end(body);
  });
}

let systemDispatcher: Agent | undefined;
const guardedAgent = (resolve: Resolver) => new Agent({ connect: { lookup: guardedLookup(resolve) as never } });

/**
 * A fetch for a client library that speaks to a checked target itself (the MCP SDK's transport):
 * the same rules as postToTarget, on every connection it opens, so a DNS answer that turns private
 * after the target was checked (rebinding) is refused too.
 */
export function targetFetch(resolve: Resolver = systemResolver): typeof fetch {
  // One connection pool for every session with the system's resolver; a test's own resolver gets its own.
  const dispatcher = resolve === systemResolver ? (systemDispatcher ??= guardedAgent(systemResolver)) : guardedAgent(resolve);
  return ((input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : input);
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && allowPrivate())) return Promise.reject(new TargetRefused('the URL must use https'));
    const literal = literalHost(url);
    // A literal address never reaches the lookup hook, so it is checked here.
    if (literal && forbiddenAddress(literal) && !allowPrivate()) return Promise.reject(new TargetRefused(`refused target address ${literal}`));
    // Never followed here: a redirect to an address literal would skip the lookup's check (the caller follows, through this fetch again).
    return undiciFetch(input as never, { ...(init as object), redirect: 'manual', dispatcher } as never);
  }) as typeof fetch;
}
