/**
 * The `observe` section: how the gateway is watched from outside. `observe.metrics` is the
 * Prometheus endpoint (`sections/metrics.ts`, docs/observability.md "Metrics").
 */
import type { Checker } from '../checker.js';
import type { ObserveConfig } from '../types.js';
import { METRICS_DEFAULTS, readMetrics } from './metrics.js';

export const OBSERVE_KEYS = ['metrics'] as const;

export const OBSERVE_DEFAULTS: ObserveConfig = Object.freeze({ metrics: METRICS_DEFAULTS });

export function readObserve(c: Checker, raw: unknown, authConfigured: boolean): ObserveConfig {
  const p = ['observe'];
  const f = c.section(raw, p, OBSERVE_KEYS);
  return { metrics: readMetrics(c, f.get('metrics'), [...p, 'metrics'], authConfigured) };
}
