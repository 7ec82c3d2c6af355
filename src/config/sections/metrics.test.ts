import { describe, expect, it } from 'vitest';
import type { GatewayConfig } from '../types.js';
import { type ConfigIssue, type ValidateOptions, validateConfig } from '../validate.js';
import { METRICS_DEFAULTS } from './metrics.js';

const BASE: ValidateOptions = { baseDir: '/etc/switchboard', env: {} };
const MINIMAL = { upstreams: { everything: { command: 'npx' } } };
const AUTH = {
  tokens: [{ principal: 'prom', sha256: 'a'.repeat(64), roles: ['metrics'] }],
};
const withMetrics = (metrics: unknown, extra: Record<string, unknown> = {}) => ({
  ...MINIMAL,
  ...extra,
  observe: { metrics },
});

function valid(raw: unknown): GatewayConfig {
  const result = validateConfig(raw, BASE);
  if (!result.ok) throw new Error(JSON.stringify(result.errors, null, 2));
  return result.config;
}

function issues(raw: unknown): ConfigIssue[] {
  const result = validateConfig(raw, BASE);
  if (result.ok) throw new Error('expected issues, the configuration is valid');
  return result.errors;
}

describe('observe.metrics', () => {
  it('is on by default, on the gateway port, for role metrics, without a principal label', () => {
    expect(valid(MINIMAL).observe.metrics).toEqual(METRICS_DEFAULTS);
    expect(valid({ ...MINIMAL, observe: null }).observe.metrics).toEqual(METRICS_DEFAULTS);
    expect(METRICS_DEFAULTS).toEqual({
      enabled: true,
      role: 'metrics',
      principalLabel: false,
      maxPrincipals: 100,
    });
  });

  it('reads every key; listen as host:port, IPv6 in brackets', () => {
    expect(
      valid(
        withMetrics({
          enabled: false,
          role: 'scraper',
          listen: '[::1]:9464',
          principalLabel: true,
          maxPrincipals: 5,
        }),
      ).observe.metrics,
    ).toEqual({
      enabled: false,
      role: 'scraper',
      listen: { host: '::1', port: 9464 },
      principalLabel: true,
      maxPrincipals: 5,
    });
    expect(valid(withMetrics({ listen: 'localhost:0' })).observe.metrics.listen).toEqual({
      host: 'localhost',
      port: 0,
    });
  });

  it('keeps a separate listener on loopback without auth, anywhere with it', () => {
    const refused = issues(withMetrics({ listen: '0.0.0.0:9464' }));
    expect(refused.map((i) => i.path)).toEqual(['observe.metrics.listen']);
    expect(refused[0]!.expected).toContain('loopback');
    expect(
      valid(withMetrics({ listen: '0.0.0.0:9464' }, { auth: AUTH, server: { host: '0.0.0.0' } })).observe
        .metrics.listen,
    ).toEqual({ host: '0.0.0.0', port: 9464 });
  });

  it('refuses what it cannot use, naming the key', () => {
    const paths = (metrics: unknown) => issues(withMetrics(metrics)).map((i) => i.path);
    expect(paths({ listen: '9464' })).toEqual(['observe.metrics.listen']);
    expect(paths({ listen: '127.0.0.1:70000' })).toEqual(['observe.metrics.listen']);
    expect(paths({ role: 'has space' })).toEqual(['observe.metrics.role']);
    expect(paths({ maxPrincipals: 0 })).toEqual(['observe.metrics.maxPrincipals']);
    expect(paths({ enabled: 'yes please' })).toEqual(['observe.metrics.enabled']);
    expect(paths({ path: '/m' })).toEqual(['observe.metrics.path']);
    expect(issues({ ...MINIMAL, observe: { metric: {} } }).map((i) => i.path)).toEqual(['observe.metric']);
  });
});
