import { describe, expect, it } from 'vitest';
import { MAX_UNROLLED, slowPatternProblem } from './pattern-safety.js';

describe('slowPatternProblem', () => {
  it.each([
    // Shapes operators write to redact their own secrets.
    'sk-[A-Za-z0-9]{20,}',
    'ACME-[0-9A-F]{32}',
    '\\b\\d{3}-\\d{2}-\\d{4}\\b',
    '(?:password|secret)\\s*[:=]\\s*\\S+',
    '"secret"\\s*:\\s*"[^"]*"',
    '[a-z]+@example\\.com',
    '\\w+@\\w+\\.\\w+',
    '(?:\\d{1,3}\\.){3}\\d{1,3}',
    '(?:[0-9a-f]{2}:){5}[0-9a-f]{2}',
    'sk-\\w+|ghp_\\w+',
    '[A-Za-z0-9+/]{40,}={0,2}',
    '(?<=token=)[^&\\s]+',
    '(?<id>EMP)-\\d{6}',
    '(?:ab)+c',
    'a*ba*',
    '\\d+\\.\\d+',
    'x{2,5}y',
    '[]',
    '\\c1',
    '\\x41+\\u0042+',
  ])('accepts %s', (pattern) => {
    expect(slowPatternProblem(pattern)).toBeUndefined();
  });

  it.each([
    ['(a+)+$', /\(a\+\)\+ repeats a group that holds a quantifier/],
    ['(?:\\w+\\s?)*x', /repeats a group/],
    ['(a|ab)*c', /repeats a group that holds a quantifier, an alternation/],
    ['(?:(?=a)\\w)+', /lookaround/],
    ['(?:\\w+\\.){1,50}x', new RegExp(`repeats up to 50 times .*at most ${MAX_UNROLLED}`)],
    ['(a+){3}', /a\+ and a\+ can match the same characters/],
    ['\\s*\\s*x', /\\s\* and \\s\* can match the same characters one after the other/],
    ['\\w+_?\\w+x', /\\w\+ and \\w\+/],
    ['[ab]*b[ab]*c', /\[ab\]\* and \[ab\]\*/],
    ['.*=.*;', /\.\* and \.\*/],
    ['\\d+(?:x|\\d+)y', /\\d\+ and \\d\+/],
    ['(?:a|b)?a*a*', /a\* and a\*/],
    ['(?=\\s*\\s*x)y', /\\s\* and \\s\*/],
    ['(x)\\1', /\\1 is a backreference/],
    ['(?<n>x)\\k<n>', /\\k is a backreference/],
  ])('refuses %s', (pattern, problem) => {
    expect(slowPatternProblem(pattern)).toMatch(problem);
  });

  it('tells apart alternatives that never meet on one path', () => {
    expect(slowPatternProblem('(?:a+|b)(?:c|a+)')).toMatch(/a\+ and a\+/);
    expect(slowPatternProblem('(?:a+x|b)(?:c|a+)')).toBeUndefined();
  });

  it('refuses what it cannot read rather than guessing', () => {
    expect(slowPatternProblem('(?i:a+)')).toMatch(/does not read/);
  });

  it('takes time proportional to the text for what it accepts (piece-sized inputs)', () => {
    const patterns = ['(?:password|secret)\\s*[:=]\\s*\\S+x', '"secret"\\s*:\\s*"[^"]*"', 'a*ba*c'];
    const inputs = ['password= '.repeat(100), `"secret": "${'a'.repeat(1000)}`, 'a'.repeat(1000)];
    for (const source of patterns) {
      expect(slowPatternProblem(source)).toBeUndefined();
      for (const input of inputs) {
        const started = performance.now();
        input.replace(new RegExp(source, 'g'), '');
        expect(performance.now() - started).toBeLessThan(200);
      }
    }
  });
});
