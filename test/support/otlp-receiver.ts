/**
 * An OTLP/HTTP receiver for tests: a small HTTP server on a free loopback port accepting
 * `POST /v1/traces` and `POST /v1/metrics`, in protobuf (`application/x-protobuf`, decoded with
 * protobufjs from the official opentelemetry-proto definitions vendored under
 * test/fixtures/opentelemetry-proto) and in JSON (`application/json`, the OTLP/JSON mapping: ids in
 * hex, enums as numbers). Both are turned into the same plain shape, so one assertion covers both
 * encodings. Every request is kept with the encoding it came in and its headers.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import protobuf from 'protobufjs';

const PROTO_ROOT = resolve(import.meta.dirname, '../fixtures/opentelemetry-proto');

export type AttributeValue = string | number | boolean | undefined;

export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** '' for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  /** OTLP `SpanKind`: 1 internal, 2 server, 3 client. */
  readonly kind: number;
  readonly attributes: Readonly<Record<string, AttributeValue>>;
  /** OTLP `Status.code`: 0 unset, 1 ok, 2 error. */
  readonly statusCode: number;
  readonly events: readonly { name: string; attributes: Readonly<Record<string, AttributeValue>> }[];
  readonly links: readonly { traceId: string; spanId: string }[];
  readonly startNs: bigint;
  readonly endNs: bigint;
  readonly resource: Readonly<Record<string, AttributeValue>>;
}

export interface HistogramPoint {
  readonly attributes: Readonly<Record<string, AttributeValue>>;
  readonly count: number;
  readonly sum: number;
  readonly explicitBounds: readonly number[];
}

export interface ReceivedMetric {
  readonly name: string;
  readonly unit: string;
  /** Data points when the metric is a histogram. */
  readonly histogram: readonly HistogramPoint[];
}

export interface ReceivedRequest {
  readonly signal: 'traces' | 'metrics';
  readonly encoding: 'protobuf' | 'json';
  readonly headers: IncomingMessage['headers'];
}

export const SPAN_KIND = { internal: 1, server: 2, client: 3 } as const;

let rootPromise: Promise<protobuf.Root> | undefined;

function loadRoot(): Promise<protobuf.Root> {
  rootPromise ??= (async () => {
    const root = new protobuf.Root();
    root.resolvePath = (_origin, target) => join(PROTO_ROOT, target);
    await root.load(
      [
        'opentelemetry/proto/collector/trace/v1/trace_service.proto',
        'opentelemetry/proto/collector/metrics/v1/metrics_service.proto',
      ],
      { keepCase: false },
    );
    return root;
  })();
  return rootPromise;
}

/** A bytes field of the protobuf mapping (base64 with `bytes: String`) or of the JSON one (hex). */
function hexId(value: unknown, encoding: 'protobuf' | 'json'): string {
  if (typeof value !== 'string' || value === '') return '';
  return encoding === 'json' ? value.toLowerCase() : Buffer.from(value, 'base64').toString('hex');
}

type Json = Record<string, unknown>;

function anyValue(v: Json | undefined): AttributeValue {
  if (v === undefined) return undefined;
  if ('stringValue' in v) return v.stringValue as string;
  if ('boolValue' in v) return v.boolValue as boolean;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return Number(v.doubleValue);
  return JSON.stringify(v);
}

function attributesOf(list: unknown): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const kv of (list as Json[] | undefined) ?? []) out[kv.key as string] = anyValue(kv.value as Json);
  return out;
}

function spansOf(body: Json, encoding: 'protobuf' | 'json'): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of (body.resourceSpans as Json[] | undefined) ?? []) {
    const resource = attributesOf((rs.resource as Json | undefined)?.attributes);
    for (const ss of (rs.scopeSpans as Json[] | undefined) ?? []) {
      for (const s of (ss.spans as Json[] | undefined) ?? []) {
        out.push({
          traceId: hexId(s.traceId, encoding),
          spanId: hexId(s.spanId, encoding),
          parentSpanId: hexId(s.parentSpanId, encoding),
          name: s.name as string,
          kind: Number(s.kind ?? 0),
          attributes: attributesOf(s.attributes),
          statusCode: Number((s.status as Json | undefined)?.code ?? 0),
          events: ((s.events as Json[] | undefined) ?? []).map((e) => ({
            name: e.name as string,
            attributes: attributesOf(e.attributes),
          })),
          links: ((s.links as Json[] | undefined) ?? []).map((l) => ({
            traceId: hexId(l.traceId, encoding),
            spanId: hexId(l.spanId, encoding),
          })),
          startNs: BigInt(String(s.startTimeUnixNano ?? 0)),
          endNs: BigInt(String(s.endTimeUnixNano ?? 0)),
          resource,
        });
      }
    }
  }
  return out;
}

function metricsOf(body: Json): ReceivedMetric[] {
  const out: ReceivedMetric[] = [];
  for (const rm of (body.resourceMetrics as Json[] | undefined) ?? []) {
    for (const sm of (rm.scopeMetrics as Json[] | undefined) ?? []) {
      for (const m of (sm.metrics as Json[] | undefined) ?? []) {
        const histogram = m.histogram as Json | undefined;
        out.push({
          name: m.name as string,
          unit: (m.unit as string | undefined) ?? '',
          histogram: ((histogram?.dataPoints as Json[] | undefined) ?? []).map((p) => ({
            attributes: attributesOf(p.attributes),
            count: Number(p.count ?? 0),
            sum: Number(p.sum ?? 0),
            explicitBounds: ((p.explicitBounds as unknown[] | undefined) ?? []).map(Number),
          })),
        });
      }
    }
  }
  return out;
}

export interface OtlpReceiver {
  /** The base URL (`http://127.0.0.1:<port>`), what `OTEL_EXPORTER_OTLP_ENDPOINT` takes. */
  readonly url: string;
  readonly spans: ReceivedSpan[];
  readonly metrics: ReceivedMetric[];
  readonly requests: ReceivedRequest[];
  /** Resolves once `predicate` holds (checked on every export), rejects after `timeoutMs`. */
  waitFor(predicate: () => boolean, timeoutMs?: number, what?: string): Promise<void>;
  close(): Promise<void>;
}

/** Starts a receiver on a free loopback port. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const root = await loadRoot();
  const traceRequest = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
  const metricsRequest = root.lookupType(
    'opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest',
  );
  const spans: ReceivedSpan[] = [];
  const metrics: ReceivedMetric[] = [];
  const requests: ReceivedRequest[] = [];
  const waiters = new Set<() => void>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const signal = req.url === '/v1/traces' ? 'traces' : req.url === '/v1/metrics' ? 'metrics' : undefined;
      if (req.method !== 'POST' || signal === undefined) {
        res.writeHead(404).end();
        return;
      }
      const type = String(req.headers['content-type'] ?? '');
      const encoding = type.startsWith('application/json') ? 'json' : 'protobuf';
      const raw = Buffer.concat(chunks);
      let body: Json;
      try {
        if (encoding === 'json') body = JSON.parse(raw.toString('utf8')) as Json;
        else {
          const message = (signal === 'traces' ? traceRequest : metricsRequest).decode(raw);
          body = (signal === 'traces' ? traceRequest : metricsRequest).toObject(message, {
            longs: String,
            enums: Number,
            bytes: String,
            defaults: false,
          }) as Json;
        }
      } catch (error) {
        res.writeHead(400, { 'content-type': 'text/plain' }).end(String(error));
        return;
      }
      requests.push({ signal, encoding, headers: req.headers });
      if (signal === 'traces') spans.push(...spansOf(body, encoding));
      else metrics.push(...metricsOf(body));
      if (encoding === 'json') res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      for (const wake of waiters) wake();
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    metrics,
    requests,
    waitFor(predicate, timeoutMs = 15_000, what = 'the expected telemetry') {
      if (predicate()) return Promise.resolve();
      return new Promise<void>((done, fail) => {
        const wake = (): void => {
          if (!predicate()) return;
          clearTimeout(timer);
          waiters.delete(wake);
          done();
        };
        const timer = setTimeout(() => {
          waiters.delete(wake);
          fail(new Error(`the OTLP receiver did not get ${what} within ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(wake);
      });
    },
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}
