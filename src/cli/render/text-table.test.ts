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
});
