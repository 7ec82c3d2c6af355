/**
 * The metric names a PromQL expression reads, for checking the shipped dashboard and alerting rules
 * against the gateway's metric catalogue. Not a PromQL parser: it removes what cannot be a metric
 * name (strings, label matchers, ranges and durations, the label lists of `by`, `without`, `on`,
 * `ignoring`, `group_left`, `group_right`, numbers, keywords, function names, Grafana variables)
 * and keeps the identifiers left. A histogram's series (`_bucket`, `_sum`, `_count`) are also
 * given under the histogram's name, so a catalogue can list either.
 */

const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'inf',
  'nan',
]);

/** The identifiers of `expr` that name metrics (see the file comment). */
export function metricNamesOf(expr: string): string[] {
  let text = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ') // strings
    .replace(/\$\{[^}]*\}|\$\w+/g, ' ') // Grafana variables
    .replace(/\{[^}]*\}/g, ' ') // label matchers
    .replace(/\[[^\]]*\]/g, ' ') // ranges and subqueries
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' '); // label lists
  // Function calls: an identifier followed by "(".
  text = text.replace(/\b[a-zA-Z_][a-zA-Z0-9_]*\s*\(/g, ' ');
  const names = new Set<string>();
  for (const m of text.matchAll(/(?<![\w.])[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const name = m[0];
    if (KEYWORDS.has(name.toLowerCase())) continue;
    names.add(name);
  }
  return [...names];
}

/** `name` and, for a histogram's or summary's series, the family it belongs to. */
export function familiesOf(name: string): string[] {
  const family = /^(.*)_(bucket|sum|count)$/.exec(name)?.[1];
  return family === undefined ? [name] : [name, family];
}

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

/**
 * The labels each metric of the catalogue documents: from the column headed "Labels" of each table
 * under "## Metrics", the names in backticks ("the same, and `x`" adds to the row above's). A
 * metric whose table has no such column maps to undefined (its labels are not checked).
 */
export function catalogueLabelsOf(markdown: string): Map<string, Set<string> | undefined> {
  const out = new Map<string, Set<string> | undefined>();
  const start = markdown.search(/^## Metrics\s*$/m);
  if (start < 0) return out;
  const rest = markdown.slice(start + 1);
  const end = rest.search(/^## /m);
  const section = end < 0 ? rest : rest.slice(0, end);
  let labelsColumn: number | undefined;
  let previous: Set<string> | undefined;
  for (const line of section.split('\n')) {
    if (!line.startsWith('|')) {
      labelsColumn = undefined;
      continue;
    }
    const cells = line
      .slice(1, line.lastIndexOf('|'))
      .split('|')
      .map((c) => c.trim());
    const name = /^`([a-zA-Z_:][a-zA-Z0-9_:]*)`$/.exec(cells[0] ?? '')?.[1];
    if (name === undefined) {
      const at = cells.findIndex((c) => c.toLowerCase() === 'labels');
      if (at >= 0) labelsColumn = at;
      continue;
    }
    if (labelsColumn === undefined) {
      out.set(name, undefined);
      continue;
    }
    const cell = cells[labelsColumn] ?? '';
    const labels = new Set([...cell.matchAll(/`([a-zA-Z_][a-zA-Z0-9_]*)`/g)].map((m) => m[1]!));
    if (/^the same\b/i.test(cell)) for (const l of previous ?? []) labels.add(l);
    out.set(name, labels);
    previous = labels;
  }
  return out;
}

/** Each `metric{label…}` selector of `expr`: the metric and the label names it matches on. */
export function selectorLabelsOf(expr: string): { metric: string; labels: string[] }[] {
  const text = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""');
  const out: { metric: string; labels: string[] }[] = [];
  for (const m of text.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}/g)) {
    const labels = [...m[2]!.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)].map((l) => l[1]!);
    out.push({ metric: m[1]!, labels });
  }
  return out;
}
