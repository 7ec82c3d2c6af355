/**
 * A plain-text table: columns padded to their widest cell, two spaces apart, no borders, so that
 * output stays greppable and diffable. Widths are computed on the unpainted text and colour is
 * applied after padding, so escape codes never disturb alignment. Given a width, a table that
 * would be wider truncates its shrinkable columns (with `…`) until it fits; the commands' `--wide`
 * passes no width and gets every cell whole.
 */
import type { Paint } from './style.js';

/** One cell: its text and, optionally, how to paint it. */
export interface Cell {
  readonly text: string;
  readonly paint?: Paint;
}

/**
 * A column heading; `align: 'right'` suits numbers and durations. `shrink` is the narrowest the
 * column may be truncated to when the table must fit a width; a column without it (ids a person
 * copies into the next command) is never cut.
 */
export interface Column {
  readonly title: string;
  readonly align?: 'left' | 'right';
  readonly shrink?: number;
}

/** The width tables fit by default when stdout is not a terminal that says its own. */
export const DEFAULT_TABLE_WIDTH = 120;

const GAP = 2;

/**
 * Renders `rows` under `columns` as lines joined by `\n` (with a trailing newline). A row shorter
 * than the header is padded with empty cells; trailing spaces are trimmed from every line.
 */
export function renderTable(
  columns: readonly Column[],
  rows: readonly (readonly (Cell | string)[])[],
  header?: Paint,
  fit?: number,
): string {
  const cells = rows.map((row) => columns.map((_, i) => toCell(row[i])));
  const widths = columns.map((column, i) =>
    Math.max(column.title.length, ...cells.map((row) => row[i]?.text.length ?? 0)),
  );
  if (fit !== undefined) shrinkToFit(columns, widths, fit);
  const line = (row: readonly Cell[]): string =>
    row
      .map((cell, i) => {
        const width = widths[i] ?? 0;
        const text = truncate(cell.text, width);
        const padded = columns[i]?.align === 'right' ? text.padStart(width) : text.padEnd(width);
        return cell.paint ? paintKeepingPadding(padded, cell.paint) : padded;
      })
      .join(' '.repeat(GAP))
      .trimEnd();
  const head = line(columns.map((c) => ({ text: c.title, ...(header ? { paint: header } : {}) })));
  return `${[head, ...cells.map(line)].join('\n')}\n`;
}

/**
 * Narrows the shrinkable columns, widest first and one character at a time, until the table is at
 * most `fit` wide or every one is at its minimum (the table may then stay wider).
 */
function shrinkToFit(columns: readonly Column[], widths: number[], fit: number): void {
  let total = widths.reduce((a, b) => a + b, 0) + GAP * Math.max(0, widths.length - 1);
  while (total > fit) {
    let widest = -1;
    widths.forEach((w, i) => {
      const min = columns[i]?.shrink;
      if (min !== undefined && w > Math.max(min, 1) && (widest < 0 || w > (widths[widest] ?? 0))) widest = i;
    });
    if (widest < 0) return;
    widths[widest] = (widths[widest] ?? 0) - 1;
    total--;
  }
}

/** `text` cut to `width` characters, its last one `…` when anything was cut. */
export function truncate(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, Math.max(0, width - 1))}…`;
}

function toCell(value: Cell | string | undefined): Cell {
  if (value === undefined) return { text: '' };
  return typeof value === 'string' ? { text: value } : value;
}

/** Paints only the non-blank part, so trimming trailing blanks never leaves a dangling code. */
function paintKeepingPadding(padded: string, paint: Paint): string {
  const start = padded.length - padded.trimStart().length;
  const core = padded.trim();
  if (core === '') return padded;
  return padded.slice(0, start) + paint(core) + padded.slice(start + core.length);
}
