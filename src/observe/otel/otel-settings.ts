/**
 * What OpenTelemetry export does, worked out from `observe.otel` and the standard `OTEL_*`
 * environment variables, before anything of OpenTelemetry is loaded: when the answer is "off", the
 * gateway never imports an `@opentelemetry/*` module (`otel-runtime.ts` is loaded only when on).
 *
 * Whether export is on, signal by signal (docs/observability.md, "Turning it on", has the table):
 *
 * 1. `OTEL_SDK_DISABLED=true` (case-insensitive, as the SDK specification defines a true boolean)
 *    turns everything off, whatever else says.
 * 2. `OTEL_TRACES_EXPORTER=none` / `OTEL_METRICS_EXPORTER=none` turn that signal off, even when the
 *    file enables export; `otlp` is the only other value honoured (anything else is refused).
 * 3. `enabled` in the file decides for both signals when it is there.
 * 4. Without it, a signal is on exactly when the environment asks for its OTLP export: the
 *    generic `OTEL_EXPORTER_OTLP_ENDPOINT` (both signals), the signal's own endpoint
 *    (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `..._METRICS_ENDPOINT`), or the signal's exporter
 *    named explicitly (`OTEL_TRACES_EXPORTER=otlp`). This is how an operator turns on a process
 *    they did not configure. The SDK's own default exporter (`otlp`, to localhost) is not followed
 *    when nothing is set: the gateway is an application with export built in, off by default, so
 *    an unset environment must not start sending to localhost:4318 (as Docker's CLI and other
 *    instrumented servers do, an endpoint or an explicit exporter turns it on).
 *
 * Every other variable only configures an export that is on. A setting in the file wins over its
 * environment variable; the environment fills what the file leaves out; then the defaults. Pure:
 * the environment is a parameter.
 */
import type { OtelConfig, OtlpProtocol } from '../../config/types.js';

/** The sampler of the span provider (OTEL_TRACES_SAMPLER's values). */
export type SamplerName =
  | 'always_on'
  | 'always_off'
  | 'traceidratio'
  | 'parentbased_always_on'
  | 'parentbased_always_off'
  | 'parentbased_traceidratio';

export const SAMPLER_NAMES: readonly SamplerName[] = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
];

export interface OtelSettings {
  /** Whether spans are exported (else none are recorded: the sampler drops every trace). */
  readonly traces: boolean;
  /** Whether the duration histograms are exported. */
  readonly metrics: boolean;
  /** Where spans go (a full URL, `/v1/traces` included). */
  readonly tracesUrl: string;
  /** Where metrics go (a full URL, `/v1/metrics` included). */
  readonly metricsUrl: string;
  readonly protocol: OtlpProtocol;
  readonly headers: Readonly<Record<string, string>>;
  readonly sampler: SamplerName;
  /** For the `*traceidratio` samplers. */
  readonly ratio: number;
  readonly serviceName: string;
  readonly resourceAttributes: Readonly<Record<string, string>>;
  readonly forwardBaggage: boolean;
  /** How often metrics are pushed (OTEL_METRIC_EXPORT_INTERVAL, default 60 s). */
  readonly metricIntervalMs: number;
}

export type OtelDecision =
  | { readonly on: false }
  | { readonly on: true; readonly settings: OtelSettings }
  | { readonly on: false; readonly error: string };

export const DEFAULT_OTLP_ENDPOINT = 'http://localhost:4318';
export const DEFAULT_SERVICE_NAME = 'switchboard';
const DEFAULT_METRIC_INTERVAL_MS = 60_000;

/** Decides whether OpenTelemetry export is on and with what, from the file's section and `env`. */
export function otelSettings(config: OtelConfig, env: NodeJS.ProcessEnv): OtelDecision {
  if (isTrue(env.OTEL_SDK_DISABLED)) return { on: false };
  const envEndpoint = nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  const envTraces = nonEmpty(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  const envMetrics = nonEmpty(env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT);
  const tracesExporter = exporterOf(env, 'OTEL_TRACES_EXPORTER');
  if ('error' in tracesExporter) return { on: false, error: tracesExporter.error };
  const metricsExporter = exporterOf(env, 'OTEL_METRICS_EXPORTER');
  if ('error' in metricsExporter) return { on: false, error: metricsExporter.error };
  const asked = (signalEndpoint: string | undefined, exporter: Exporter | undefined): boolean =>
    config.enabled ?? (envEndpoint !== undefined || signalEndpoint !== undefined || exporter === 'otlp');
  const traces = tracesExporter.value !== 'none' && asked(envTraces, tracesExporter.value);
  const metrics = metricsExporter.value !== 'none' && asked(envMetrics, metricsExporter.value);
  if (!traces && !metrics) return { on: false };

  const base = config.endpoint ?? envEndpoint ?? DEFAULT_OTLP_ENDPOINT;
  const tracesUrl = config.endpoint === undefined && envTraces ? envTraces : signalUrl(base, 'traces');
  const metricsUrl = config.endpoint === undefined && envMetrics ? envMetrics : signalUrl(base, 'metrics');

  const protocolText = config.protocol ?? nonEmpty(env.OTEL_EXPORTER_OTLP_PROTOCOL) ?? 'http/protobuf';
  if (protocolText !== 'http/protobuf' && protocolText !== 'http/json')
    return {
      on: false,
      error: `OTEL_EXPORTER_OTLP_PROTOCOL=${protocolText}: the gateway exports http/protobuf or http/json (not grpc)`,
    };

  const envHeaders = parseKeyValueList(env.OTEL_EXPORTER_OTLP_HEADERS);
  if (!envHeaders.ok) return { on: false, error: `OTEL_EXPORTER_OTLP_HEADERS: ${envHeaders.error}` };
  const envResource = parseKeyValueList(env.OTEL_RESOURCE_ATTRIBUTES);
  if (!envResource.ok) return { on: false, error: `OTEL_RESOURCE_ATTRIBUTES: ${envResource.error}` };

  let sampler: SamplerName;
  let ratio = 1;
  if (config.sampleRatio !== undefined) {
    sampler = 'parentbased_traceidratio';
    ratio = config.sampleRatio;
  } else {
    const named = nonEmpty(env.OTEL_TRACES_SAMPLER) ?? 'parentbased_always_on';
    if (!(SAMPLER_NAMES as readonly string[]).includes(named))
      return {
        on: false,
        error: `OTEL_TRACES_SAMPLER=${named}: expected one of ${SAMPLER_NAMES.join(', ')}`,
      };
    sampler = named as SamplerName;
    const arg = nonEmpty(env.OTEL_TRACES_SAMPLER_ARG);
    if (arg !== undefined && sampler.endsWith('traceidratio')) {
      const n = Number(arg);
      if (!Number.isFinite(n) || n < 0 || n > 1)
        return { on: false, error: `OTEL_TRACES_SAMPLER_ARG=${arg}: expected a number from 0 to 1` };
      ratio = n;
    }
  }

  const interval = nonEmpty(env.OTEL_METRIC_EXPORT_INTERVAL);
  const metricIntervalMs = interval === undefined ? DEFAULT_METRIC_INTERVAL_MS : Number(interval);
  if (!Number.isInteger(metricIntervalMs) || metricIntervalMs <= 0)
    return { on: false, error: `OTEL_METRIC_EXPORT_INTERVAL=${interval}: expected milliseconds, above 0` };

  const resourceAttributes = { ...envResource.value, ...config.resourceAttributes };
  const serviceName =
    config.serviceName ??
    nonEmpty(env.OTEL_SERVICE_NAME) ??
    resourceAttributes['service.name'] ??
    DEFAULT_SERVICE_NAME;
  return {
    on: true,
    settings: {
      traces,
      metrics,
      tracesUrl,
      metricsUrl,
      protocol: protocolText,
      headers: { ...envHeaders.value, ...config.headers },
      sampler,
      ratio,
      serviceName,
      resourceAttributes,
      forwardBaggage: config.forwardBaggage,
      metricIntervalMs,
    },
  };
}

/** `<base>/v1/<signal>`, with one slash between (the OTLP/HTTP rule for the generic endpoint). */
export function signalUrl(base: string, signal: 'traces' | 'metrics'): string {
  return `${base.replace(/\/+$/, '')}/v1/${signal}`;
}

/**
 * `key1=value1,key2=value2` (the W3C Baggage shape OTEL_EXPORTER_OTLP_HEADERS and
 * OTEL_RESOURCE_ATTRIBUTES use): values percent-decoded, blanks around entries ignored.
 */
export function parseKeyValueList(
  text: string | undefined,
): { ok: true; value: Record<string, string> } | { ok: false; error: string } {
  const value: Record<string, string> = {};
  if (text === undefined || text.trim() === '') return { ok: true, value };
  for (const part of text.split(',')) {
    if (part.trim() === '') continue;
    const eq = part.indexOf('=');
    const key = eq > 0 ? part.slice(0, eq).trim() : '';
    if (key === '') return { ok: false, error: 'expected key=value pairs separated by commas' };
    try {
      value[key] = decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      return { ok: false, error: `the value of ${key} is not valid percent-encoding` };
    }
  }
  return { ok: true, value };
}

/** The values of `OTEL_TRACES_EXPORTER` / `OTEL_METRICS_EXPORTER` the gateway honours. */
type Exporter = 'otlp' | 'none';

/** A signal's exporter variable: unset, `otlp` or `none`; any other exporter is refused. */
function exporterOf(
  env: NodeJS.ProcessEnv,
  name: 'OTEL_TRACES_EXPORTER' | 'OTEL_METRICS_EXPORTER',
): { value: Exporter | undefined } | { error: string } {
  const text = nonEmpty(env[name])?.toLowerCase();
  if (text === undefined || text === 'otlp' || text === 'none') return { value: text };
  return { error: `${name}=${env[name]?.trim()}: the gateway exports otlp (over HTTP) or none` };
}

function nonEmpty(text: string | undefined): string | undefined {
  return text === undefined || text.trim() === '' ? undefined : text.trim();
}

function isTrue(text: string | undefined): boolean {
  return text !== undefined && text.trim().toLowerCase() === 'true';
}
