import { describe, expect, it } from 'vitest';
import { createStyle } from './style.js';
import { renderTable } from './text-table.js';

describe('renderTable', () => {
  it('pads columns to the widest cell, right-aligns where asked and trims line ends', () => {
    const out = renderTable(
      [{ title: 'NAME' }, { title: 'N', align: 'right' }, { title: 'NOTE' }],
      [['alpha', '1', ''], ['b', '100', 'x'], ['c']],
    );
    expect(out).toBe(['NAME     N  NOTE', 'alpha    1', 'b      100  x', 'c'].join('\n') + '\n');
  });

  it('aligns on the unpainted text, so colour never shifts a column', () => {
    const style = createStyle(true);
    const painted = renderTable(
      [{ title: 'A' }, { title: 'B' }],
      [[{ text: 'xy', paint: style.error }, 'z']],
    );
    const plain = renderTable([{ title: 'A' }, { title: 'B' }], [['xy', 'z']]);
    const ESC = String.fromCharCode(27);
    expect(painted.replaceAll(new RegExp(`${ESC}\\[\\d+m`, 'g'), '')).toBe(plain);
    expect(painted).toContain(`${ESC}[31mxy${ESC}[39m  z`);
  });

  it('renders a header alone for no rows', () => {
    expect(renderTable([{ title: 'ONLY' }], [])).toBe('ONLY\n');
  });

  it('cuts shrinkable columns, widest first, with "…" until the table fits, never the others', () => {
    const columns = [{ title: 'ID' }, { title: 'TEXT', shrink: 4 }, { title: 'MORE', shrink: 4 }];
    const rows = [['0123456789', 'abcdefghijklmnop', 'qrstuvwx']];
    const out = renderTable(columns, rows, undefined, 30).split('\n');
    expect(out.every((l) => l.length <= 30)).toBe(true);
    expect(out[1]).toBe('0123456789  abcdefg…  qrstuvwx');
    // At their minimums they stop: the table stays wider rather than cutting an id.
    expect(renderTable(columns, rows, undefined, 5).split('\n')[1]).toBe('0123456789  abc…  qrs…');
    expect(renderTable(columns, rows).split('\n')[1]).toBe('0123456789  abcdefghijklmnop  qrstuvwx');
  });
});
