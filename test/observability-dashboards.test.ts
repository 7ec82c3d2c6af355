/**
 * The Grafana dashboard (docs/grafana/switchboard.json) and the Prometheus alerting rules
 * (docs/prometheus/switchboard-alerts.yml) that issue 21 ships, held to what the gateway exports:
 *
 * - `promtool check rules` accepts the rules, and `promtool test rules` runs their unit tests
 *   (docs/prometheus/switchboard-alerts.cases.yml: series in, the alerts that must fire and must
 *   not); promtool comes with Debian's `prometheus` package, which `.ci/run` installs, so in CI a
 *   missing promtool fails, elsewhere those tests are skipped and say so;
 * - the dashboard is JSON Grafana imports (`__inputs` naming its Prometheus data source, panels
 *   with queries), and every metric name in its queries, its variables and the rules is one the
 *   gateway exports: the metric catalogue in docs/observability.md ("Metrics": its tables, which
 *   `src/observe/prometheus/gateway-metrics.test.ts` holds to what is registered), plus the
 *   process and GC metrics prom-client registers (asked of prom-client itself). Until that
 *   catalogue exists the check is skipped with a message, except in CI, where it must exist.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ROOT } from './support/cli.js';
import {
  catalogueLabelsOf,
  catalogueOf,
  familiesOf,
  metricNamesOf,
  selectorLabelsOf,
} from './support/promql-names.js';

const RULES = join(ROOT, 'docs/prometheus/switchboard-alerts.yml');
const RULE_TESTS = join(ROOT, 'docs/prometheus/switchboard-alerts.cases.yml');
const DASHBOARD = join(ROOT, 'docs/grafana/switchboard.json');
const CATALOGUE_DOC = join(ROOT, 'docs/observability.md');

function hasPromtool(): boolean {
  return spawnSync('promtool', ['--version'], { stdio: 'ignore' }).status === 0;
}
const promtool = hasPromtool();
if (!promtool && process.env.CI)
  throw new Error("promtool is missing in CI: .ci/run installs Debian's prometheus package, which has it");
if (!promtool)
  console.warn(
    'observability-dashboards.test.ts: promtool not found (Debian package prometheus): skipping `promtool check rules` and `promtool test rules`',
  );

/** The catalogue: the documented metrics and prom-client's own process and GC metrics. */
async function catalogue(): Promise<Set<string>> {
  const documented = catalogueOf(readFileSync(CATALOGUE_DOC, 'utf8'));
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const own = (await registry.getMetricsAsJSON()).map((m) => m.name);
  return new Set([...documented, ...own]);
}

const documented = catalogueOf(readFileSync(CATALOGUE_DOC, 'utf8')).size > 0;
if (!documented && process.env.CI)
  throw new Error(
    'docs/observability.md has no metric table under "## Metrics": the catalogue the dashboard and rules are checked against',
  );
if (!documented)
  console.warn(
    'observability-dashboards.test.ts: docs/observability.md has no "## Metrics" table yet: skipping the metric-name checks',
  );

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

interface Dashboard {
  readonly __inputs?: unknown[];
  readonly panels: Panel[];
  readonly uid?: string;
  readonly title?: string;
  readonly templating?: { list: { query?: string | { query?: string } }[] };
}

function dashboard(): Dashboard {
  return JSON.parse(readFileSync(DASHBOARD, 'utf8'));
}

function allPanels(panels: readonly Panel[]): Panel[] {
  return panels.flatMap((p) => [p, ...allPanels(p.panels ?? [])]);
}

/**
 * The PromQL of the dashboard's variables: `label_values(<selector>, <label>)` reads the selector's
 * metric (its second argument is a label name); `query_result(<expr>)` and a bare expression are
 * PromQL.
 */
function variableExprs(d: Dashboard): string[] {
  return (d.templating?.list ?? []).flatMap((v) => {
    const q = typeof v.query === 'string' ? v.query : v.query?.query;
    if (q === undefined || q === '') return [];
    const labelValues = /^label_values\((.*),\s*[a-zA-Z_]\w*\s*\)$/.exec(q.trim());
    return [labelValues ? labelValues[1]! : q];
  });
}

/** Labels every series has once scraped. */
const ALWAYS = new Set(['instance', 'job']);

/**
 * `metric{label}` pairs in `exprs` whose label the catalogue does not document for that metric
 * (metrics documented without a labels column, and prom-client's own, are not checked); `le` is a
 * histogram bucket's.
 */
function unknownLabels(exprs: readonly string[]): string[] {
  const labels = catalogueLabelsOf(readFileSync(CATALOGUE_DOC, 'utf8'));
  const unknown = new Set<string>();
  for (const expr of exprs)
    for (const { metric, labels: used } of selectorLabelsOf(expr)) {
      const family = familiesOf(metric).find((n) => labels.has(n));
      const documented = family === undefined ? undefined : labels.get(family);
      if (documented === undefined) continue;
      for (const label of used)
        if (!documented.has(label) && !ALWAYS.has(label) && !(label === 'le' && metric.endsWith('_bucket')))
          unknown.add(`${metric}{${label}}`);
    }
  return [...unknown].sort();
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
      metricNamesOf(
        'sum(rate(a_total[5m] offset 1h)) / ignoring(outcome) group_left sum without (x) (b_total) or vector(0)',
      ),
    ).toEqual(['a_total', 'b_total']);
    expect(metricNamesOf('max_over_time(c[10m:1m]) and on (upstream) d == bool 1')).toEqual(['c', 'd']);
  });

  it("reads each metric's documented labels, and the labels a selector matches on", () => {
    const doc =
      '## Metrics\n| Metric | Type | Labels | What |\n|---|---|---|---|\n| `a_seconds` | histogram | `x`, `y` | . |\n| `b_seconds` | histogram | the same, and `z` | . |\n\n| Metric | What |\n|---|---|\n| `c_total` | . |\n';
    expect(catalogueLabelsOf(doc)).toEqual(
      new Map<string, Set<string> | undefined>([
        ['a_seconds', new Set(['x', 'y'])],
        ['b_seconds', new Set(['x', 'y', 'z'])],
        ['c_total', undefined],
      ]),
    );
    expect(
      selectorLabelsOf('sum by (le) (rate(a_seconds_bucket{x=~"$v", y!="}"}[5m])) / c_total{ z = "1" }'),
    ).toEqual([
      { metric: 'a_seconds_bucket', labels: ['x', 'y'] },
      { metric: 'c_total', labels: ['z'] },
    ]);
  });

  it('reads the catalogue from the tables of a Metrics section only', () => {
    const doc =
      '## Health\n| `not_this` | x |\n## Metrics\n| Name | Labels |\n|---|---|\n| `a_total` | x |\n| `b_seconds` | y |\n## Traces\n| `nor_this` |\n';
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

  it.runIf(documented)('name only metrics the gateway exports, with labels they have', async () => {
    const exprs = rules().map((r) => r.expr);
    expect(unknownNames(exprs, await catalogue())).toEqual([]);
    expect(unknownLabels(exprs)).toEqual([]);
  });
});

describe('Grafana dashboard (docs/grafana/switchboard.json)', () => {
  it('is JSON Grafana imports: a Prometheus data source input, a uid, panels with queries', () => {
    const d = dashboard();
    expect(d.uid).toMatch(/^[\w-]{1,40}$/);
    expect(d.title).toBeTruthy();
    expect(d.__inputs).toEqual([
      expect.objectContaining({ name: 'DS_PROMETHEUS', type: 'datasource', pluginId: 'prometheus' }),
    ]);
    const queried = allPanels(d.panels).filter((p) => p.type !== 'row');
    expect(queried.length).toBeGreaterThan(0);
    for (const panel of queried) {
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets ?? []) expect(target.expr, panel.title).toBeTruthy();
    }
    // A latency panel, and the alerts' subjects.
    const titles = queried.map((p) => p.title.toLowerCase()).join(' | ');
    for (const subject of ['latency', 'upstream', 'ledger', 'approval', 'error'])
      expect(titles).toContain(subject);
  });

  it.runIf(documented)('queries only metrics the gateway exports, with labels they have', async () => {
    const d = dashboard();
    const exprs = allPanels(d.panels).flatMap((p) => (p.targets ?? []).map((t) => t.expr ?? ''));
    expect(exprs.length).toBeGreaterThan(0);
    expect(unknownNames([...exprs, ...variableExprs(d)], await catalogue())).toEqual([]);
    expect(unknownLabels([...exprs, ...variableExprs(d)])).toEqual([]);
  });

  it("reads its variables' metrics, not their label arguments", () => {
    expect(
      variableExprs({
        panels: [],
        templating: {
          list: [{ query: { query: 'label_values(a_info{x="1"}, instance)' } }, { query: 'up' }],
        },
      }).flatMap(metricNamesOf),
    ).toEqual(['a_info', 'up']);
  });
});
