import { describe, expect, it } from 'vitest';
import { createStyle } from './style.js';

const ESC = String.fromCharCode(27);

describe('createStyle', () => {
  it('adds no escape codes at all when colour is off', () => {
    const style = createStyle(false);
    for (const paint of Object.values(style)) expect(paint('text')).toBe('text');
  });

  it('wraps text in SGR codes that are reset afterwards when colour is on', () => {
    const style = createStyle(true);
    expect(style.error('boom')).toBe(`${ESC}[31mboom${ESC}[39m`);
    expect(style.dim('x')).toBe(`${ESC}[2mx${ESC}[22m`);
    expect(style.bold('')).toBe('');
  });
});
