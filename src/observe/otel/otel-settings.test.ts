import { describe, expect, it } from 'vitest';
import { OTEL_DEFAULTS } from '../../config/sections/otel.js';
import type { OtelConfig } from '../../config/types.js';
import { type OtelSettings, otelSettings, parseKeyValueList, signalUrl } from './otel-settings.js';

function on(config: Partial<OtelConfig>, env: NodeJS.ProcessEnv = {}): OtelSettings {
  const decision = otelSettings({ ...OTEL_DEFAULTS, ...config }, env);
  if (!decision.on) throw new Error(`expected on, got ${JSON.stringify(decision)}`);
  return decision.settings;
}

describe('otelSettings', () => {
  it('is off by default: no file setting, no OTEL_* endpoint', () => {
    expect(otelSettings(OTEL_DEFAULTS, {})).toEqual({ on: false });
    expect(otelSettings(OTEL_DEFAULTS, { OTEL_SERVICE_NAME: 'x' })).toEqual({ on: false });
  });

  it('is on when the environment names an endpoint, unless the file says enabled: false', () => {
    const settings = on({}, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' });
    expect(settings.tracesUrl).toBe('http://collector:4318/v1/traces');
    expect(settings.metricsUrl).toBe('http://collector:4318/v1/metrics');
    expect(
      otelSettings({ ...OTEL_DEFAULTS, enabled: false }, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }),
    ).toEqual({ on: false });
  });

  it('is off with OTEL_SDK_DISABLED=true whatever else says', () => {
    expect(
      otelSettings(
        { ...OTEL_DEFAULTS, enabled: true, endpoint: 'http://c:4318' },
        { OTEL_SDK_DISABLED: 'TRUE' },
      ),
    ).toEqual({ on: false });
  });

  it('has the defaults of the SDKs when on with nothing else', () => {
    expect(on({ enabled: true })).toEqual({
      traces: true,
      metrics: true,
      tracesUrl: 'http://localhost:4318/v1/traces',
      metricsUrl: 'http://localhost:4318/v1/metrics',
      protocol: 'http/protobuf',
      headers: {},
      sampler: 'parentbased_always_on',
      ratio: 1,
      serviceName: 'switchboard',
      resourceAttributes: {},
      forwardBaggage: false,
      metricIntervalMs: 60_000,
    });
  });

  it('lets the file win over the environment, and the environment fill the rest', () => {
    const settings = on(
      {
        enabled: true,
        endpoint: 'https://file:4318',
        headers: { authorization: 'from-file' },
        resourceAttributes: { 'deployment.environment.name': 'prod' },
      },
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://env:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://env:4318/custom/traces',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_HEADERS: 'authorization=from-env,x-team=a%20b',
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=dev,service.namespace=mcp',
        OTEL_SERVICE_NAME: 'env-name',
      },
    );
    expect(settings.tracesUrl).toBe('https://file:4318/v1/traces');
    expect(settings.protocol).toBe('http/json');
    expect(settings.headers).toEqual({ authorization: 'from-file', 'x-team': 'a b' });
    expect(settings.resourceAttributes).toEqual({
      'deployment.environment.name': 'prod',
      'service.namespace': 'mcp',
    });
    expect(settings.serviceName).toBe('env-name');
  });

  it('uses the signal endpoints of the environment as they are', () => {
    const settings = on(
      {},
      {
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://t:1/x',
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://m:2/y',
      },
    );
    expect([settings.tracesUrl, settings.metricsUrl]).toEqual(['http://t:1/x', 'http://m:2/y']);
  });

  it('samples by the file ratio (parent-based), else by OTEL_TRACES_SAMPLER and its argument', () => {
    expect(on({ enabled: true, sampleRatio: 0.25 }, { OTEL_TRACES_SAMPLER: 'always_off' })).toMatchObject({
      sampler: 'parentbased_traceidratio',
      ratio: 0.25,
    });
    expect(
      on({ enabled: true }, { OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.5' }),
    ).toMatchObject({ sampler: 'traceidratio', ratio: 0.5 });
  });

  it('refuses what it cannot honour, with a sentence naming the variable', () => {
    const cases: [NodeJS.ProcessEnv, RegExp][] = [
      [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, /OTEL_EXPORTER_OTLP_PROTOCOL=grpc/],
      [{ OTEL_TRACES_SAMPLER: 'jaeger_remote' }, /OTEL_TRACES_SAMPLER=jaeger_remote/],
      [{ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' }, /OTEL_TRACES_SAMPLER_ARG=2/],
      [{ OTEL_EXPORTER_OTLP_HEADERS: 'novalue' }, /OTEL_EXPORTER_OTLP_HEADERS/],
      [{ OTEL_METRIC_EXPORT_INTERVAL: '0' }, /OTEL_METRIC_EXPORT_INTERVAL/],
      [{ OTEL_TRACES_EXPORTER: 'zipkin' }, /OTEL_TRACES_EXPORTER=zipkin: the gateway exports otlp/],
      [{ OTEL_METRICS_EXPORTER: 'prometheus' }, /OTEL_METRICS_EXPORTER=prometheus/],
    ];
    for (const [env, message] of cases) {
      const decision = otelSettings({ ...OTEL_DEFAULTS, enabled: true }, env);
      expect(decision.on).toBe(false);
      expect('error' in decision ? decision.error : '').toMatch(message);
    }
  });
});

/**
 * The table of docs/observability.md ("Turning it on"), row by row: which variables turn export on
 * (and which signals), which turn it off, and which only configure an export that is on.
 */
describe('what turns export on, signal by signal', () => {
  const signals = (config: Partial<OtelConfig>, env: NodeJS.ProcessEnv) => {
    const decision = otelSettings({ ...OTEL_DEFAULTS, ...config }, env);
    if ('error' in decision) throw new Error(decision.error);
    return decision.on ? { traces: decision.settings.traces, metrics: decision.settings.metrics } : 'off';
  };
  const both = { traces: true, metrics: true };

  it('OTEL_SDK_DISABLED=true: off, whatever the file and the rest of the environment say', () => {
    const everything = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'otlp' };
    expect(signals({ enabled: true }, { ...everything, OTEL_SDK_DISABLED: 'True' })).toBe('off');
    // Only "true" is true (the specification forbids other spellings of it).
    expect(signals({}, { ...everything, OTEL_SDK_DISABLED: '1' })).toEqual(both);
  });

  it('enabled in the file: both signals, or none, whatever the endpoints say', () => {
    expect(signals({ enabled: true }, {})).toEqual(both);
    expect(signals({ enabled: false }, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toBe('off');
    expect(signals({ enabled: false }, { OTEL_TRACES_EXPORTER: 'otlp' })).toBe('off');
  });

  it('OTEL_EXPORTER_OTLP_ENDPOINT: both signals', () => {
    expect(signals({}, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toEqual(both);
  });

  it("a signal's own endpoint: that signal only", () => {
    expect(signals({}, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' })).toEqual({
      traces: true,
      metrics: false,
    });
    expect(signals({}, { OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://c:4318/v1/metrics' })).toEqual({
      traces: false,
      metrics: true,
    });
  });

  it("a signal's exporter named otlp: that signal, to the default endpoint", () => {
    const decision = otelSettings(OTEL_DEFAULTS, { OTEL_TRACES_EXPORTER: 'OTLP' });
    expect(decision).toMatchObject({
      on: true,
      settings: { traces: true, metrics: false, tracesUrl: 'http://localhost:4318/v1/traces' },
    });
    expect(signals({}, { OTEL_METRICS_EXPORTER: 'otlp' })).toEqual({ traces: false, metrics: true });
  });

  it("a signal's exporter none: that signal off, even when the file enables export", () => {
    expect(signals({ enabled: true }, { OTEL_TRACES_EXPORTER: 'none' })).toEqual({
      traces: false,
      metrics: true,
    });
    expect(
      signals({}, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_METRICS_EXPORTER: 'none' }),
    ).toEqual({
      traces: true,
      metrics: false,
    });
    expect(signals({ enabled: true }, { OTEL_TRACES_EXPORTER: 'none', OTEL_METRICS_EXPORTER: 'none' })).toBe(
      'off',
    );
  });

  it.each([
    ['OTEL_EXPORTER_OTLP_PROTOCOL', 'http/json'],
    ['OTEL_EXPORTER_OTLP_HEADERS', 'a=b'],
    ['OTEL_SERVICE_NAME', 'gw'],
    ['OTEL_RESOURCE_ATTRIBUTES', 'deployment.environment=prod'],
    ['OTEL_TRACES_SAMPLER', 'always_on'],
    ['OTEL_TRACES_SAMPLER_ARG', '0.5'],
    ['OTEL_METRIC_EXPORT_INTERVAL', '1000'],
    ['OTEL_BSP_MAX_QUEUE_SIZE', '4096'],
    ['OTEL_TRACES_EXPORTER', 'none'],
  ])('%s alone configures, and turns nothing on', (name, value) => {
    expect(signals({}, { [name]: value })).toBe('off');
  });
});

describe('the OTEL_* helpers', () => {
  it('appends the signal path with one slash', () => {
    expect(signalUrl('http://c:4318', 'traces')).toBe('http://c:4318/v1/traces');
    expect(signalUrl('http://c:4318/otlp//', 'metrics')).toBe('http://c:4318/otlp/v1/metrics');
  });

  it('reads key=value lists, percent-decoded, blanks ignored', () => {
    expect(parseKeyValueList(' a=1 , b=x%3Dy,, ')).toEqual({ ok: true, value: { a: '1', b: 'x=y' } });
    expect(parseKeyValueList('=1').ok).toBe(false);
    expect(parseKeyValueList('a=%zz').ok).toBe(false);
  });
});
