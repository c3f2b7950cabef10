import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { openApiDocument } from '../../api/openapi/document';

/**
 * Holds every integration test to the OpenAPI document: each answer of the in-process API (host
 * 127.0.0.1, a path matching a documented template, a documented method) must have a documented
 * status and media type, and a JSON body valid against the documented schema. Violations are
 * collected while the file runs and fail it at the end, naming method, path, status and ajv's errors.
 */

type Operation = { responses: Record<string, { content?: Record<string, unknown> }> };
const paths = openApiDocument.paths as Record<string, Record<string, Operation>>;

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
// Binary bodies are never validated here; the format only annotates them.
ajv.addFormat('binary', true);
ajv.addSchema(openApiDocument, 'openapi.json');

const pointer = (...segments: string[]) => segments.map((s) => encodeURIComponent(s.replace(/~/g, '~0').replace(/\//g, '~1'))).join('/');

/** Templates with more literal segments first: /documents/uploads/{token} wins over /documents/{id}/… . */
const templates = Object.keys(paths)
  .map((template) => ({
    template,
    params: (template.match(/\{/g) ?? []).length,
    regex: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`),
  }))
  .sort((a, b) => a.params - b.params);

function operationOf(method: string, path: string): { template: string; operation: Operation } | undefined {
  // The router serves every path with or without a trailing slash (the spec writes some with one).
  const bare = path.length > 1 ? path.replace(/\/$/, '') : path;
  for (const { template, regex } of templates) {
    const operation = paths[template][method];
    if (regex.test(bare) && operation) return { template, operation };
  }
  return undefined;
}

const validators = new Map<string, ValidateFunction>();
function validatorFor(template: string, method: string, status: string): ValidateFunction {
  const key = `${method} ${template} ${status}`;
  let validator = validators.get(key);
  if (!validator) {
    validator = ajv.compile({ $ref: `openapi.json#/${pointer('paths', template, method, 'responses', status, 'content', 'application/json', 'schema')}` });
    validators.set(key, validator);
  }
  return validator;
}

const violations: string[] = [];
const pending: Promise<void>[] = [];

async function check(method: string, url: URL, res: Response): Promise<void> {
  const found = operationOf(method, url.pathname);
  if (!found) return;
  const where = `${method.toUpperCase()} ${url.pathname} → ${res.status} (${found.template})`;
  const documented = found.operation.responses[String(res.status)] ?? found.operation.responses[`${String(res.status)[0]}XX`];
  if (!documented) return void violations.push(`${where}: status not documented (documented: ${Object.keys(found.operation.responses).join(', ')})`);
  const type = (res.headers.get('content-type') ?? '').split(';')[0].trim();
  const content = documented.content ?? {};
  if (type === '' && Object.keys(content).length === 0) return;
  if (!(type in content)) return void violations.push(`${where}: content type "${type}" not documented (documented: ${Object.keys(content).join(', ') || 'none'})`);
  if (type !== 'application/json') return;
  const text = await res.clone().text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return void violations.push(`${where}: body is not JSON: ${text.slice(0, 200)}`);
  }
  const validate = validatorFor(found.template, method, String(res.status));
  if (!validate(body)) violations.push(`${where}: ${ajv.errorsText(validate.errors, { separator: '; ' })}\n    body: ${text.slice(0, 600)}`);
}

const realFetch = globalThis.fetch;
/** Servers on loopback that are not the API (a test's own stand-in routes): their answers are not the API's. */
const standIns = new Set<string>();

/** Tells the check that this server, though it answers on API paths, is a test's stand-in, not the API. */
export function notTheApi(url: string): void {
  standIns.add(new URL(url).origin);
}

/** The stack's own servers that are not the API: the stub provider and the model server (llama.cpp answers /v1 paths too). */
const NOT_THE_API = [process.env.STUB_URL, process.env.TEST_MODEL_SERVER_URL].flatMap((url) => (url ? [new URL(url).origin] : []));
const apiOrigins = (url: URL) => url.hostname === '127.0.0.1' && !standIns.has(url.origin) && !NOT_THE_API.includes(url.origin);

globalThis.fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
  const res = await realFetch(input, init);
  const url = new URL(input instanceof Request ? input.url : String(input));
  const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toLowerCase();
  if (apiOrigins(url) && method !== 'head' && method !== 'options') {
    pending.push(check(method, url, res).catch((err) => void violations.push(`${method.toUpperCase()} ${url.pathname}: contract check failed: ${String(err)}`)));
  }
  return res;
};

afterAll(async () => {
  await Promise.all(pending);
  globalThis.fetch = realFetch;
  if (violations.length > 0) throw new Error(`${violations.length} response(s) break the OpenAPI document (api/openapi/):\n  ${violations.join('\n  ')}`);
});
