/**
 * The text of a scrape: metric families (as prom-client's `get()` returns them) written in the
 * Prometheus text format 0.0.4 or in OpenMetrics 1.0, whichever the scraper asked for.
 *
 * prom-client's own `Registry.metrics()` has one format per registry, and renaming a counter for
 * OpenMetrics changes the metric object itself (`_total` taken off its name for good), so a
 * gateway that answers both formats writes the text here instead, from the same families.
 */

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
export const OPENMETRICS_CONTENT_TYPE = 'application/openmetrics-text; version=1.0.0; charset=utf-8';

export type ExpositionFormat = 'prometheus' | 'openmetrics';

/** One sample of a family: `metricName` for a histogram's `_bucket`, `_sum`, `_count` series. */
export interface Sample {
  readonly value: number;
  readonly labels?: Readonly<Record<string, string | number | undefined>>;
  readonly metricName?: string;
}

/** One metric family, as `Metric.get()` of prom-client gives it. */
export interface Family {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'gauge' | 'histogram' | 'summary' | string;
  readonly values: readonly Sample[];
}

/**
 * The format a scraper asked for with `Accept`: OpenMetrics when it names
 * `application/openmetrics-text` (with a q-value above 0), else the Prometheus text format.
 */
export function negotiateFormat(accept: string | undefined): ExpositionFormat {
  if (accept === undefined) return 'prometheus';
  for (const part of accept.split(',')) {
    const [type, ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    if (type !== 'application/openmetrics-text') continue;
    const q = params.find((p) => p.startsWith('q='));
    if (q === undefined || Number(q.slice(2)) > 0) return 'openmetrics';
  }
  return 'prometheus';
}

function escapeHelp(text: string, format: ExpositionFormat): string {
  const escaped = text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
  return format === 'openmetrics' ? escaped.replace(/"/g, '\\"') : escaped;
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

/** A number as both formats write it (`+Inf`, `-Inf`, `NaN`). */
export function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}

function labelText(labels: Sample['labels']): string {
  if (labels === undefined) return '';
  let out = '';
  for (const name in labels) {
    const value = labels[name];
    if (value === undefined) continue;
    const text = typeof value === 'number' ? formatValue(value) : value;
    out += `${out === '' ? '' : ','}${name}="${escapeLabel(text)}"`;
  }
  return out === '' ? '' : `{${out}}`;
}

/** The families written in `format`: HELP and TYPE, then each sample; OpenMetrics ends with `# EOF`. */
export function expose(families: readonly Family[], format: ExpositionFormat): string {
  const lines: string[] = [];
  for (const family of families) {
    const counter = family.type === 'counter';
    // OpenMetrics names a counter family without `_total`, and its samples with it.
    const name = format === 'openmetrics' && counter ? family.name.replace(/_total$/, '') : family.name;
    lines.push(`# HELP ${name} ${escapeHelp(family.help, format)}`);
    lines.push(`# TYPE ${name} ${family.type}`);
    for (const sample of family.values) {
      const metric =
        sample.metricName ?? (format === 'openmetrics' && counter ? `${name}_total` : family.name);
      lines.push(`${metric}${labelText(sample.labels)} ${formatValue(sample.value)}`);
    }
  }
  return format === 'openmetrics' ? `${lines.join('\n')}\n# EOF\n` : `${lines.join('\n')}\n`;
}
