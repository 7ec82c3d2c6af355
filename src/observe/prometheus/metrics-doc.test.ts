/**
 * docs/observability.md ("Metrics") lists every metric `/metrics` exports: each family the registry
 * registers, and each counter the code keeps in `Metrics` (found in the sources: `.inc('name'`
 * and the named constants the ledger and the trace count with), as `switchboard_<name>`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Metrics } from '../metrics.js';
import { exportedCounterName } from './counter-bridge.js';
import { GatewayMetrics } from './gateway-metrics.js';

const ROOT = resolve(import.meta.dirname, '../../..');

/** The metric names in the first column of the tables under "## Metrics". */
function documented(): Set<string> {
  const doc = readFileSync(join(ROOT, 'docs/observability.md'), 'utf8');
  const start = doc.search(/^## Metrics\s*$/m);
  const rest = doc.slice(start + 1);
  const end = rest.search(/^## /m);
  const section = end < 0 ? rest : rest.slice(0, end);
  return new Set([...section.matchAll(/^\|\s*`([a-zA-Z_:][a-zA-Z0-9_:]*)`/gm)].map((m) => m[1] ?? ''));
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'test-support' ? [] : sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** Every counter name the sources increment: literals, and the `*Metric`/`*_METRIC` constants. */
function countersInCode(): Set<string> {
  const names = new Set<string>();
  for (const file of sources(join(ROOT, 'src'))) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/\.inc\(\s*'([a-z0-9_]+)'/g)) names.add(m[1] ?? '');
    for (const m of text.matchAll(/^export const \w+Metric = \{([^}]*)\}/gm))
      for (const v of (m[1] ?? '').matchAll(/'([a-z0-9_]+_total)'/g)) names.add(v[1] ?? '');
    for (const m of text.matchAll(/^export const \w+_METRIC = '([a-z0-9_]+)'/gm)) names.add(m[1] ?? '');
  }
  return names;
}

describe('docs/observability.md, Metrics', () => {
  it('lists every family the registry exports', async () => {
    const gm = new GatewayMetrics({
      metrics: new Metrics(),
      version: 'x',
      processMetrics: false,
      sources: {
        callsInFlight: () => 0,
        upstreamRequestsPending: () => 0,
        upstreams: () => [],
        httpStreams: () => ({ legacy: 0, modern: 0 }),
        resumption: () => ({ events: 0, bytes: 0, streams: 0 }),
        traceQueue: () => 0,
        ledger: () => ({ queued: 0 }),
        approvalsPending: () => 0,
        spaceParticipants: () => 0,
      },
    });
    const families = (await gm.registry.getMetricsAsJSON()).map((f) => f.name);
    expect(families.length).toBeGreaterThan(20);
    const doc = documented();
    expect(families.filter((name) => !doc.has(name))).toEqual([]);
  });

  it('lists every counter the code keeps, as switchboard_<name>', () => {
    const inCode = [...countersInCode()].map(exportedCounterName);
    expect(inCode.length).toBeGreaterThan(90);
    const doc = documented();
    expect(inCode.filter((name) => !doc.has(name)).sort()).toEqual([]);
  });
});
