/**
 * How `tape check` prints its judgement: for people, one block per comparison that is not the
 * same (what was asked, where it differs, the recorded and the live value, long values cut), then
 * a summary line; for machines (`--json`), the report as one JSON object.
 */
import type { Difference } from './answer-diff.js';
import type { CheckItem, CheckReport } from './compare-run.js';

/** The longest value printed whole; longer ones are cut in the middle of nothing, at the end. */
export const VALUE_LIMIT = 160;

/** A value as JSON text, cut to `limit` characters with a note of how long it was. */
export function shortValue(value: unknown, limit = VALUE_LIMIT): string {
  const text = value === undefined ? '(absent)' : JSON.stringify(value);
  if (text.length <= limit) return text;
  return `${text.slice(0, limit)}… (${text.length} characters)`;
}

function title(item: CheckItem): string {
  const what =
    item.kind === 'answer' ? 'answer to' : item.kind === 'progress' ? 'progress of' : 'server request';
  const seq = item.seq === undefined ? '' : ` (seq ${item.seq})`;
  const target = item.target === undefined ? '' : ` ${item.target}`;
  return `${what} ${item.method}${target}${seq}`;
}

function differenceLines(d: Difference): string[] {
  const lines = [`    ${d.path === '' ? '(the whole value)' : d.path}`];
  if (d.kind !== 'added') lines.push(`      recorded: ${shortValue(d.recorded)}`);
  else lines.push('      recorded: (absent)');
  if (d.kind !== 'removed') lines.push(`      live:     ${shortValue(d.live)}`);
  else lines.push('      live:     (absent)');
  return lines;
}

const MARK: Record<CheckItem['status'], string> = {
  same: 'same',
  differs: 'DIFFERS',
  missing: 'MISSING',
  unexpected: 'UNEXPECTED',
};

/** The report as text: every comparison that is not the same (all with `verbose`), then the summary. */
export function renderReport(report: CheckReport, options: { verbose?: boolean } = {}): string {
  const out: string[] = [];
  for (const item of report.items) {
    if (item.status === 'same' && options.verbose !== true) continue;
    const note = item.note === undefined ? '' : `: ${item.note}`;
    out.push(`${MARK[item.status]}  ${title(item)}${note}`);
    for (const d of item.differences) out.push(...differenceLines(d));
  }
  if (report.skipped > 0)
    out.push(`${report.skipped} calls not compared: the tape does not hold their answers whole (incomplete)`);
  if (report.closed !== undefined) out.push(`the server went away before the end: ${report.closed}`);
  out.push(summaryLine(report));
  return `${out.join('\n')}\n`;
}

/** `12 compared: 11 same, 1 differs` with the kinds counted. */
export function summaryLine(report: CheckReport): string {
  const count = (kind: CheckItem['kind']): number => report.items.filter((i) => i.kind === kind).length;
  const kinds = `${count('answer')} answers, ${count('server-request')} server requests, ${count('progress')} progress sequences`;
  if (report.differing === 0) return `ok: ${report.compared} compared (${kinds}), none differs`;
  return `FAILED: ${report.differing} of ${report.compared} differ (${kinds})`;
}

/** The report for machines: `{ ok, compared, differing, closed?, items }`. */
export function reportJson(report: CheckReport): string {
  return `${JSON.stringify({ ok: report.differing === 0, ...report })}\n`;
}
