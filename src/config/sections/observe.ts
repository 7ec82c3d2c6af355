/**
 * The `observe` section: how the gateway is watched from outside. `observe.otel` is OpenTelemetry
 * (`sections/otel.ts`, docs/observability.md "Traces").
 */
import type { Checker } from '../checker.js';
import type { ObserveConfig } from '../types.js';
import { OTEL_DEFAULTS, readOtel } from './otel.js';

export const OBSERVE_KEYS = ['otel'] as const;

export const OBSERVE_DEFAULTS: ObserveConfig = Object.freeze({ otel: OTEL_DEFAULTS });

export function readObserve(c: Checker, raw: unknown): ObserveConfig {
  const p = ['observe'];
  const f = c.section(raw, p, OBSERVE_KEYS);
  return { otel: readOtel(c, f.get('otel'), [...p, 'otel']) };
}
