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
    ];
    for (const [env, message] of cases) {
      const decision = otelSettings({ ...OTEL_DEFAULTS, enabled: true }, env);
      expect(decision.on).toBe(false);
      expect('error' in decision ? decision.error : '').toMatch(message);
    }
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
