/**
 * The `observe` section: how the gateway is watched from outside. `observe.metrics` is the
 * Prometheus endpoint (`sections/metrics.ts`, docs/observability.md "Metrics"); `observe.otel` is
 * OpenTelemetry (`sections/otel.ts`, docs/observability.md "Traces").
 */
import type { Checker } from '../checker.js';
import type { ObserveConfig } from '../types.js';
import { METRICS_DEFAULTS, readMetrics } from './metrics.js';
import { OTEL_DEFAULTS, readOtel } from './otel.js';

export const OBSERVE_KEYS = ['metrics', 'otel'] as const;

export const OBSERVE_DEFAULTS: ObserveConfig = Object.freeze({
  metrics: METRICS_DEFAULTS,
  otel: OTEL_DEFAULTS,
});

export function readObserve(c: Checker, raw: unknown, authConfigured: boolean): ObserveConfig {
  const p = ['observe'];
  const f = c.section(raw, p, OBSERVE_KEYS);
  return {
    metrics: readMetrics(c, f.get('metrics'), [...p, 'metrics'], authConfigured),
    otel: readOtel(c, f.get('otel'), [...p, 'otel']),
  };
}
