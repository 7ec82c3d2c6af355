/**
 * A plain-text table: columns padded to their widest cell, two spaces apart, no borders, so that
 * output stays greppable and diffable. Widths are computed on the unpainted text and colour is
 * applied after padding, so escape codes never disturb alignment.
 */
import type { Paint } from './style.js';

/** One cell: its text and, optionally, how to paint it. */
export interface Cell {
  readonly text: string;
  readonly paint?: Paint;
}

/** A column heading; `align: 'right'` suits numbers and durations. */
export interface Column {
  readonly title: string;
  readonly align?: 'left' | 'right';
}

/**
 * Renders `rows` under `columns` as lines joined by `\n` (with a trailing newline). A row shorter
 * than the header is padded with empty cells; trailing spaces are trimmed from every line.
 */
export function renderTable(
  columns: readonly Column[],
  rows: readonly (readonly (Cell | string)[])[],
  header?: Paint,
): string {
  const cells = rows.map((row) => columns.map((_, i) => toCell(row[i])));
  const widths = columns.map((column, i) =>
    Math.max(column.title.length, ...cells.map((row) => row[i]?.text.length ?? 0)),
  );
  const line = (row: readonly Cell[]): string =>
    row
      .map((cell, i) => {
        const width = widths[i] ?? 0;
        const padded = columns[i]?.align === 'right' ? cell.text.padStart(width) : cell.text.padEnd(width);
        return cell.paint ? paintKeepingPadding(padded, cell.paint) : padded;
      })
      .join('  ')
      .trimEnd();
  const head = line(columns.map((c) => ({ text: c.title, ...(header ? { paint: header } : {}) })));
  return `${[head, ...cells.map(line)].join('\n')}\n`;
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
