/**
 * OpenTelemetry when it is on: one tracer provider and one meter provider of the official SDK,
 * exporting over OTLP/HTTP (protobuf or JSON) to the configured collector, and what the gateway
 * feeds them: the MCP spans (`McpSpans`, a tap and the router's trace-context writer) and the four
 * duration histograms of the MCP semantic conventions.
 *
 * This module (and everything of `@opentelemetry/*`) is loaded with `import()` by the composition
 * only when `otelSettings` says export is on: a gateway without OpenTelemetry never loads it, and
 * the router then pays one `undefined` comparison per request it writes (test/otel-off.test.ts).
 * Nothing is registered globally (no global tracer provider, propagator or context manager): the
 * gateway passes its providers explicitly, so that an application embedding the router keeps its own.
 */
import { DiagLogLevel, diag, type Histogram } from '@opentelemetry/api';
import { OTLPMetricExporter as JsonMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as ProtoMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-base';
import type { Logger } from '../logger.js';
import { McpMetrics } from './mcp-metrics.js';
import { McpSpans } from './mcp-spans.js';
import type { OtelSettings, SamplerName } from './otel-settings.js';

/** The bucket advice of the MCP semantic conventions for all four duration histograms (seconds). */
export const MCP_DURATION_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];

/** The four histograms of the conventions, by name. */
export const MCP_METRICS = {
  serverOperation: 'mcp.server.operation.duration',
  clientOperation: 'mcp.client.operation.duration',
  serverSession: 'mcp.server.session.duration',
  clientSession: 'mcp.client.session.duration',
} as const;

export interface OtelRuntimeOptions {
  readonly settings: OtelSettings;
  readonly logger: Logger;
  /** `service.version`. */
  readonly version: string;
  /** `server.address`/`server.port` of an HTTP upstream, by its configured name. */
  readonly upstreamUrls?: Readonly<Record<string, string>>;
  /** `client.address` of the request being handled, when the transport knows it. */
  readonly clientAddress?: () => string | undefined;
}

export interface OtelRuntime {
  /** The tap to add first to the gateway's tap bus, and the router's `traceContext`. */
  readonly spans: McpSpans;
  /** The router observer that records the four duration histograms. */
  readonly metrics: McpMetrics;
  /** Ends what is open, exports what waits and stops the exporters (at most `timeoutMs`). */
  shutdown(timeoutMs?: number): Promise<void>;
}

function samplerOf(name: SamplerName, ratio: number): Sampler {
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
  }
}

/**
 * The span queue's default, larger than the SDK's 2,048: the SDK drops a finished span silently
 * when its queue is full, and at 100% sampling a gateway fills 2,048 spans (two per forwarded call)
 * in a burst of ~1,000 calls while one export is in flight. 16,384 spans hold a few seconds of a
 * loaded gateway's traffic; each is about 1–2 KB while queued, so the queue's worst case is about
 * 16–32 MB. `OTEL_BSP_MAX_QUEUE_SIZE` still decides when set (the SDK reads the `OTEL_BSP_*`
 * variables for every setting the gateway leaves undefined).
 */
export const SPAN_QUEUE_DEFAULT = 16_384;

/** The batch span processor's settings the gateway sets (others: the SDK's, or `OTEL_BSP_*`). */
export function batchSettings(env: NodeJS.ProcessEnv): { maxQueueSize?: number } {
  return env.OTEL_BSP_MAX_QUEUE_SIZE?.trim() ? {} : { maxQueueSize: SPAN_QUEUE_DEFAULT };
}

function addressOf(url: string): { address: string; port: number } | undefined {
  try {
    const u = new URL(url);
    const port = u.port === '' ? (u.protocol === 'https:' ? 443 : 80) : Number(u.port);
    return { address: u.hostname.replace(/^\[|\]$/g, ''), port };
  } catch {
    return undefined;
  }
}

/** Starts the providers and exporters; nothing is sent until there is something to send. */
export function startOtel(options: OtelRuntimeOptions): OtelRuntime {
  const { settings, logger } = options;
  // The SDK reports export failures through `diag`; they belong in the gateway's log (warn and up).
  diag.setLogger(
    {
      error: (message, ...args) => logger.warn({ otel: args.map(String).join(' ') }, message),
      warn: (message, ...args) => logger.warn({ otel: args.map(String).join(' ') }, message),
      info: () => {},
      debug: () => {},
      verbose: () => {},
    },
    { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true },
  );
  const resource = resourceFromAttributes({
    ...settings.resourceAttributes,
    'service.name': settings.serviceName,
    'service.version': options.version,
  });
  const json = settings.protocol === 'http/json';
  const traceExporter = json
    ? new JsonTraceExporter({ url: settings.tracesUrl, headers: { ...settings.headers } })
    : new ProtoTraceExporter({ url: settings.tracesUrl, headers: { ...settings.headers } });
  const metricExporter = json
    ? new JsonMetricExporter({ url: settings.metricsUrl, headers: { ...settings.headers } })
    : new ProtoMetricExporter({ url: settings.metricsUrl, headers: { ...settings.headers } });
  // A signal that is off (`OTEL_*_EXPORTER=none`) gets no exporter; spans are then not even
  // recorded (the sampler drops every trace), so trace context still passes through unchanged.
  const tracerProvider = new BasicTracerProvider({
    resource,
    sampler: settings.traces ? samplerOf(settings.sampler, settings.ratio) : samplerOf('always_off', 0),
    spanProcessors: settings.traces
      ? [new BatchSpanProcessor(traceExporter, batchSettings(process.env))]
      : [],
  });
  const meterProvider = new MeterProvider({
    resource,
    readers: settings.metrics
      ? [
          new PeriodicExportingMetricReader({
            exporter: metricExporter,
            exportIntervalMillis: settings.metricIntervalMs,
            exportTimeoutMillis: Math.min(30_000, settings.metricIntervalMs),
          }),
        ]
      : [],
  });
  const tracer = tracerProvider.getTracer('switchboard', options.version);
  const meter = meterProvider.getMeter('switchboard', options.version);
  const histogram = (name: string, description: string): Histogram =>
    meter.createHistogram(name, {
      unit: 's',
      description,
      advice: { explicitBucketBoundaries: MCP_DURATION_BUCKETS },
    });
  const serverOperation = histogram(
    MCP_METRICS.serverOperation,
    'Duration of a request the gateway handled, from its arrival to the answer written',
  );
  const clientOperation = histogram(
    MCP_METRICS.clientOperation,
    'Duration of a request the gateway sent an upstream, until its answer arrived (or it failed)',
  );
  const serverSession = histogram(MCP_METRICS.serverSession, 'Duration of a client session with the gateway');
  const clientSession = histogram(
    MCP_METRICS.clientSession,
    'Duration of a session of the gateway with an upstream server',
  );
  const addresses = new Map<string, { address: string; port: number }>();
  for (const [name, url] of Object.entries(options.upstreamUrls ?? {})) {
    const address = addressOf(url);
    if (address) addresses.set(name, address);
  }
  const spans = new McpSpans({
    tracer,
    forwardBaggage: settings.forwardBaggage,
    upstreamAddress: (name) => addresses.get(name),
    ...(options.clientAddress ? { clientAddress: options.clientAddress } : {}),
  });
  const metrics = new McpMetrics({
    serverOperation,
    clientOperation,
    serverSession,
    clientSession,
    upstreamAddress: (name) => addresses.get(name),
  });
  let stopped: Promise<void> | undefined;
  return {
    spans,
    metrics,
    shutdown(timeoutMs = 5_000) {
      stopped ??= (async () => {
        const work = Promise.allSettled([tracerProvider.shutdown(), meterProvider.shutdown()]);
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<void>((resolve) => {
          timer = setTimeout(() => {
            logger.warn(
              { timeoutMs },
              'OpenTelemetry export did not finish before shutdown; the rest is lost',
            );
            resolve();
          }, timeoutMs);
          timer.unref();
        });
        await Promise.race([work.then(() => undefined), late]);
        clearTimeout(timer);
      })();
      return stopped;
    },
  };
}
