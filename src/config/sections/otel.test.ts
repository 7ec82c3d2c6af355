// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests write ${env:NAME} references.
import { describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../types.js';
import { type ConfigIssue, type ValidateOptions, validateConfig } from '../validate.js';
import { OBSERVE_DEFAULTS } from './observe.js';

const BASE: ValidateOptions = { baseDir: '/etc/switchboard', env: { OTLP_TOKEN: 't0ken' } };
const MINIMAL = { upstreams: { everything: { command: 'npx' } } };
const withOtel = (otel: unknown) => ({ ...MINIMAL, observe: { otel } });

function valid(raw: unknown): GatewayConfig {
  const result = validateConfig(raw, BASE);
  if (!result.ok) throw new Error(JSON.stringify(result.errors, null, 2));
  return result.config;
}

function invalid(raw: unknown): ConfigIssue[] {
  const result = validateConfig(raw, BASE);
  if (result.ok) throw new Error('expected issues, the configuration is valid');
  return result.errors;
}

describe('the observe section', () => {
  it('leaves OpenTelemetry to the environment when absent (undefined enabled, nothing set)', () => {
    expect(valid(MINIMAL).observe).toEqual(OBSERVE_DEFAULTS);
    expect(valid({ ...MINIMAL, observe: null }).observe).toEqual(OBSERVE_DEFAULTS);
    expect(OBSERVE_DEFAULTS.otel.enabled).toBeUndefined();
  });

  it('reads every key of otel, headers from the environment', () => {
    const otel = valid(
      withOtel({
        enabled: true,
        endpoint: 'https://otlp.example.com:4318',
        protocol: 'http/json',
        headers: { Authorization: 'Bearer ${env:OTLP_TOKEN}' },
        sampleRatio: 0.1,
        serviceName: 'gateway-eu',
        resourceAttributes: { 'deployment.environment.name': 'prod', 'service.instance.number': 3 },
        forwardBaggage: true,
      }),
    ).observe.otel;
    expect(otel).toEqual({
      enabled: true,
      endpoint: 'https://otlp.example.com:4318',
      protocol: 'http/json',
      headers: { Authorization: 'Bearer t0ken' },
      sampleRatio: 0.1,
      serviceName: 'gateway-eu',
      resourceAttributes: { 'deployment.environment.name': 'prod', 'service.instance.number': '3' },
      forwardBaggage: true,
    });
  });

  it('refuses what it cannot use, naming the key', () => {
    const paths = (otel: unknown) => invalid(withOtel(otel)).map((i) => i.path);
    expect(paths({ endpoint: 'localhost:4318' })).toEqual(['observe.otel.endpoint']);
    expect(paths({ endpoint: 'http://user:pw@c:4318' })).toEqual(['observe.otel.endpoint']);
    expect(paths({ protocol: 'grpc' })).toEqual(['observe.otel.protocol']);
    expect(paths({ sampleRatio: 1.5 })).toEqual(['observe.otel.sampleRatio']);
    expect(paths({ sampleRatio: 'half' })).toEqual(['observe.otel.sampleRatio']);
    expect(paths({ headers: { 'bad name': 'x' } })).toEqual(['observe.otel.headers["bad name"]']);
    expect(paths({ headers: { Authorization: 'Bearer ${env:NOT_SET}' } })).toEqual([
      'observe.otel.headers.Authorization',
    ]);
    expect(paths({ headers: { 'x-a': 'a\nb' } })).toEqual(['observe.otel.headers.x-a']);
    expect(paths({ servicename: 'x' })).toEqual(['observe.otel.servicename']);
    expect(invalid({ ...MINIMAL, observe: { traces: {} } }).map((i) => i.path)).toEqual(['observe.traces']);
  });
});
