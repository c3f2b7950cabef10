import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server as GrpcServer, ServerCredentials, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
// The OTLP messages as the official exporters encode them (the exporters' own protobuf code).
import otlpRoot from '@opentelemetry/otlp-transformer/build/src/generated/root';
import type { OtlpProtocol } from '../../infra/tracing';

/** A span as an OTLP receiver got it, whatever the protocol: ids in hex, attributes as plain values. */
export interface ReceivedSpan {
  service: string;
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes: Record<string, unknown>;
}

export interface OtlpReceiver {
  /** Where OTEL_EXPORTER_OTLP_ENDPOINT points. */
  url: string;
  /** Export requests received (of any signal). */
  posts: number;
  spans: ReceivedSpan[];
  /** The headers (gRPC: metadata) of each export. */
  headers: Record<string, string>[];
  close(): void;
}

// Generated protobufjs code: its types name the root only.
const messages = (otlpRoot as any).opentelemetry.proto.collector.trace.v1;

type AnyValue = Record<string, unknown>;
const plain = (v: AnyValue | undefined): unknown => {
  if (!v) return undefined;
  if ('arrayValue' in v) return ((v.arrayValue as { values?: AnyValue[] }).values ?? []).map(plain);
  const [field] = Object.keys(v);
  const value = v[field];
  return field === 'intValue' ? Number(value) : value;
};
const hex = (id: unknown) => (typeof id === 'string' ? id : Buffer.from(id as Uint8Array).toString('hex'));

/** The spans of an ExportTraceServiceRequest, as its JSON encoding or the decoded protobuf message has them. */
function spansOf(request: { resourceSpans?: any[] }): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const rs of request.resourceSpans ?? []) {
    const service = String(plain(rs.resource?.attributes?.find((a: { key: string }) => a.key === 'service.name')?.value));
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        const parent = s.parentSpanId ? hex(s.parentSpanId) : '';
        spans.push({
          service,
          name: s.name,
          traceId: hex(s.traceId),
          spanId: hex(s.spanId),
          ...(parent && { parentSpanId: parent }),
          attributes: Object.fromEntries((s.attributes ?? []).map((a: { key: string; value: AnyValue }) => [a.key, plain(a.value)])),
        });
      }
    }
  }
  return spans;
}

const decodeProtobuf = (body: Buffer) => messages.ExportTraceServiceRequest.toObject(messages.ExportTraceServiceRequest.decode(body), { longs: String });

/**
 * An OTLP trace receiver on loopback, as a collector is for the protocol: OTLP/HTTP (POST /v1/traces,
 * the JSON or the protobuf encoding, by its content type) or OTLP/gRPC (TraceService/Export).
 */
export async function otlpReceiver(protocol: OtlpProtocol): Promise<OtlpReceiver> {
  const received: Omit<OtlpReceiver, 'url' | 'close'> = { posts: 0, spans: [], headers: [] };
  if (protocol === 'grpc') {
    const server = new GrpcServer();
    server.addService(
      {
        Export: {
          path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
          requestStream: false,
          responseStream: false,
          requestSerialize: (m: unknown) => Buffer.from(messages.ExportTraceServiceRequest.encode(m).finish()),
          requestDeserialize: decodeProtobuf,
          responseSerialize: (m: unknown) => Buffer.from(messages.ExportTraceServiceResponse.encode(m).finish()),
          responseDeserialize: (b: Buffer) => messages.ExportTraceServiceResponse.decode(b),
        },
      },
      {
        Export: (call: ServerUnaryCall<{ resourceSpans?: unknown[] }, unknown>, reply: sendUnaryData<unknown>) => {
          received.posts++;
          received.headers.push(Object.fromEntries(Object.entries(call.metadata.getMap()).map(([k, v]) => [k, String(v)])));
          received.spans.push(...spansOf(call.request));
          reply(null, {});
        },
      },
    );
    const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
    return Object.assign(received, { url: `http://127.0.0.1:${port}`, close: () => server.forceShutdown() });
  }
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c)).on('end', () => {
      received.posts++;
      received.headers.push(Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])));
      const body = Buffer.concat(chunks);
      const json = String(req.headers['content-type']).startsWith('application/json');
      if (req.url === '/v1/traces') received.spans.push(...spansOf(json ? JSON.parse(body.toString()) : decodeProtobuf(body)));
      if (json) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end(Buffer.from(messages.ExportTraceServiceResponse.encode({}).finish()));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(received, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() });
}
