/**
 * Every counter the gateway keeps in `Metrics` (observe/metrics.ts: malformed input, orphans,
 * refusals, restarts, the ledger's and the trace's writes...), as Prometheus counters named
 * `switchboard_<name>` with the same labels, read at each scrape. The names already follow the
 * Prometheus rules (snake_case, `_total`); one that does not is made to (`_total` added, other
 * characters replaced), so a new counter is exported without a change here.
 *
 * A `method` label is bounded like the traffic metrics' (`label-bounds.ts`): a few counters are
 * kept by the method a client named, which may be any string.
 */
import type { Labels, Metrics } from '../metrics.js';
import type { Family, Sample } from './exposition.js';
import { boundMethod } from './label-bounds.js';

export const PREFIX = 'switchboard_';

/** `switchboard_<name>`, snake_case, ending in `_total`. */
export function exportedCounterName(name: string): string {
  const snake = name.replace(/[^a-zA-Z0-9_]/g, '_').replace(/^(\d)/, '_$1');
  return `${PREFIX}${snake.endsWith('_total') ? snake : `${snake}_total`}`;
}

function exportedLabels(labels: Labels): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key in labels) {
    const name = key.replace(/[^a-zA-Z0-9_]/g, '_').replace(/^(\d|__)/, '_$1');
    const value = labels[key] as string;
    out[name] = name === 'method' ? boundMethod(value) : value;
  }
  return out;
}

/**
 * The counters of `metrics` as families, in name order; `taken` names (the registry's own
 * metrics) are left out, so two families never share a name. Label sets that a bound made equal
 * are summed.
 */
export function counterFamilies(metrics: Metrics, taken: ReadonlySet<string>): Family[] {
  const byName = new Map<string, Map<string, { labels: Record<string, string>; value: number }>>();
  for (const sample of metrics.snapshot()) {
    const name = exportedCounterName(sample.name);
    if (taken.has(name)) continue;
    let series = byName.get(name);
    if (series === undefined) {
      series = new Map();
      byName.set(name, series);
    }
    const labels = exportedLabels(sample.labels);
    const key = JSON.stringify(Object.entries(labels).sort());
    const existing = series.get(key);
    if (existing) existing.value += sample.value;
    else series.set(key, { labels, value: sample.value });
  }
  return [...byName.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, series]) => ({
      name,
      help: `The gateway's ${name.slice(PREFIX.length)} counter (docs/observability.md lists what each counts).`,
      type: 'counter',
      values: [...series.values()].map((s): Sample => ({ labels: s.labels, value: s.value })),
    }));
}
