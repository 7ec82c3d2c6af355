/**
 * The Grafana dashboard (docs/grafana/switchboard.json) and the Prometheus alerting rules
 * (docs/prometheus/switchboard-alerts.yml) that issue 21 ships, held to what the gateway exports:
 *
 * - `promtool check rules` accepts the rules, and `promtool test rules` runs their unit tests
 *   (docs/prometheus/switchboard-alerts.test.yml: series in, the alerts that must fire and must
 *   not); promtool comes with Debian's `prometheus` package, which `.ci/run` installs, so in CI a
 *   missing promtool fails, elsewhere those tests are skipped and say so;
 * - the dashboard is JSON Grafana imports (`__inputs` naming its Prometheus data source, panels
 *   with queries), and every metric name in its queries and in the rules is one the gateway
 *   exports: the metric catalogue in docs/observability.md ("Metrics"), whose table the metrics
 *   work keeps beside the code that registers them.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { ROOT } from './support/cli.js';
import { familiesOf, metricNamesOf } from './support/promql-names.js';

const RULES = join(ROOT, 'docs/prometheus/switchboard-alerts.yml');
const RULE_TESTS = join(ROOT, 'docs/prometheus/switchboard-alerts.test.yml');
const DASHBOARD = join(ROOT, 'docs/grafana/switchboard.json');
const CATALOGUE_DOC = join(ROOT, 'docs/observability.md');

function hasPromtool(): boolean {
  return spawnSync('promtool', ['--version'], { stdio: 'ignore' }).status === 0;
}
const promtool = hasPromtool();
if (!promtool && process.env.CI)
  throw new Error('promtool is missing in CI: .ci/run installs Debian\'s prometheus package, which has it');
if (!promtool)
  console.warn(
    'observability-dashboards.test.ts: promtool not found (Debian package prometheus): skipping `promtool check rules` and `promtool test rules`',
  );

/**
 * The metric names of the catalogue: the first column of the tables under "## Metrics" in
 * docs/observability.md, each a name in backticks (a histogram listed once, by its family name).
 */
export function catalogueOf(markdown: string): Set<string> {
  const start = markdown.search(/^## Metrics\s*$/m);
  if (start < 0) return new Set();
  const rest = markdown.slice(start + 1);
  const end = rest.search(/^## /m);
  const section = end < 0 ? rest : rest.slice(0, end);
  const names = new Set<string>();
  for (const line of section.split('\n')) {
    const cell = /^\|\s*`([a-zA-Z_:][a-zA-Z0-9_:]*)`/.exec(line);
    if (cell) names.add(cell[1]!);
  }
  return names;
}

interface Rule {
  readonly alert?: string;
  readonly record?: string;
  readonly expr: string;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
}

function rules(): Rule[] {
  const doc = parse(readFileSync(RULES, 'utf8')) as { groups: { rules: Rule[] }[] };
  return doc.groups.flatMap((g) => g.rules);
}

interface Panel {
  readonly type: string;
  readonly title: string;
  readonly panels?: Panel[];
  readonly targets?: { expr?: string; refId?: string }[];
}

function dashboard(): { __inputs?: unknown[]; panels: Panel[]; uid?: string; title?: string } {
  return JSON.parse(readFileSync(DASHBOARD, 'utf8'));
}

function allPanels(panels: readonly Panel[]): Panel[] {
  return panels.flatMap((p) => [p, ...allPanels(p.panels ?? [])]);
}

/** Names in `exprs` that the catalogue does not list (directly, or as a histogram's series). */
function unknownNames(exprs: readonly string[], catalogue: ReadonlySet<string>): string[] {
  const unknown = new Set<string>();
  for (const expr of exprs)
    for (const name of metricNamesOf(expr))
      if (!familiesOf(name).some((n) => catalogue.has(n))) unknown.add(name);
  return [...unknown].sort();
}

describe('metricNamesOf (the check below is only as good as this)', () => {
  it('keeps metric names and drops functions, labels, strings, ranges, keywords and numbers', () => {
    expect(
      metricNamesOf(
        'histogram_quantile(0.99, sum by (le, upstream) (rate(switchboard_calls_duration_seconds_bucket{outcome="error", upstream=~"$upstream"}[5m]))) > 0.5',
      ),
    ).toEqual(['switchboard_calls_duration_seconds_bucket']);
    expect(
      metricNamesOf('sum(rate(a_total[5m] offset 1h)) / ignoring(outcome) group_left sum without (x) (b_total) or vector(0)'),
    ).toEqual(['a_total', 'b_total']);
    expect(metricNamesOf('max_over_time(c[10m:1m]) and on (upstream) d == bool 1')).toEqual(['c', 'd']);
  });

  it('reads the catalogue from the tables of a Metrics section only', () => {
    const doc = '## Health\n| `not_this` | x |\n## Metrics\n| Name | Labels |\n|---|---|\n| `a_total` | x |\n| `b_seconds` | y |\n## Traces\n| `nor_this` |\n';
    expect([...catalogueOf(doc)]).toEqual(['a_total', 'b_seconds']);
  });
});

describe('Prometheus alerting rules (docs/prometheus/switchboard-alerts.yml)', () => {
  it.runIf(promtool)('pass promtool check rules', () => {
    const out = execFileSync('promtool', ['check', 'rules', RULES], { encoding: 'utf8' });
    expect(out).toMatch(/SUCCESS: \d+ rules found/);
  });

  it.runIf(promtool)('fire, and stay quiet, as their unit tests say (promtool test rules)', () => {
    const run = spawnSync('promtool', ['test', 'rules', RULE_TESTS], { encoding: 'utf8' });
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
  });

  it('cover what issue 21 asks for, each with a summary and a severity', () => {
    const alerts = rules().filter((r) => r.alert !== undefined);
    const names = alerts.map((r) => r.alert);
    for (const wanted of [
      'SwitchboardUpstreamDown',
      'SwitchboardLedgerFailingClosed',
      'SwitchboardApprovalsWaitingTooLong',
      'SwitchboardHighErrorRate',
    ])
      expect(names).toContain(wanted);
    for (const alert of alerts) {
      expect(alert.labels?.severity, alert.alert).toMatch(/^(critical|warning|info)$/);
      expect(alert.annotations?.summary, alert.alert).toBeTruthy();
    }
  });

  it('name only metrics the gateway exports', () => {
    const catalogue = catalogueOf(readFileSync(CATALOGUE_DOC, 'utf8'));
    expect(catalogue.size, 'docs/observability.md has no metric table under "## Metrics"').toBeGreaterThan(0);
    expect(unknownNames(rules().map((r) => r.expr), catalogue)).toEqual([]);
  });
});

describe('Grafana dashboard (docs/grafana/switchboard.json)', () => {
  it('is JSON Grafana imports: a Prometheus data source input, a uid, panels with queries', () => {
    const d = dashboard();
    expect(d.uid).toMatch(/^[\w-]{1,40}$/);
    expect(d.title).toBeTruthy();
    expect(d.__inputs).toEqual([expect.objectContaining({ name: 'DS_PROMETHEUS', type: 'datasource', pluginId: 'prometheus' })]);
    const queried = allPanels(d.panels).filter((p) => p.type !== 'row');
    expect(queried.length).toBeGreaterThan(0);
    for (const panel of queried) {
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets ?? []) expect(target.expr, panel.title).toBeTruthy();
    }
    // A latency panel, and the alerts' subjects.
    const titles = queried.map((p) => p.title.toLowerCase()).join(' | ');
    for (const subject of ['latency', 'upstream', 'ledger', 'approval', 'error']) expect(titles).toContain(subject);
  });

  it('queries only metrics the gateway exports', () => {
    const catalogue = catalogueOf(readFileSync(CATALOGUE_DOC, 'utf8'));
    const exprs = allPanels(dashboard().panels).flatMap((p) => (p.targets ?? []).map((t) => t.expr ?? ''));
    expect(unknownNames(exprs, catalogue)).toEqual([]);
  });
});
