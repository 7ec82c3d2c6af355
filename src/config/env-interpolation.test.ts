// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests are about the ${env:NAME} syntax itself.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { escapeInterpolation, interpolateEnv } from './env-interpolation.js';

const path = 'upstreams.remote.headers.Authorization';
const env = { TOKEN: 's3cret', USER_NAME: 'ada', EMPTY: '' };

describe('interpolateEnv', () => {
  it.each([
    ['plain text', 'plain text'],
    ['Bearer ${env:TOKEN}', 'Bearer s3cret'],
    ['${env:USER_NAME}:${env:TOKEN}', 'ada:s3cret'],
    ['${env:TOKEN}${env:TOKEN}', 's3crets3cret'],
    ['[${env:EMPTY}]', '[]'],
    ['cost: $5, {braces}', 'cost: $5, {braces}'],
    ['$${env:TOKEN}', '${env:TOKEN}'],
    ['a $${literal} b', 'a ${literal} b'],
    ['$$${env:TOKEN}', '$${env:TOKEN}'],
    ['$', '$'],
    ['}', '}'],
  ])('%j becomes %j', (text, expected) => {
    expect(interpolateEnv(text, env, path)).toEqual({ ok: true, value: expected });
  });

  it('names the key and the variable when a variable is not set', () => {
    const result = interpolateEnv('Bearer ${env:REMOTE_TOKEN}', env, path);
    expect(result).toEqual({
      ok: false,
      errors: [
        {
          path,
          variable: 'REMOTE_TOKEN',
          found: '${env:REMOTE_TOKEN}, but REMOTE_TOKEN is not set',
          expected: 'the environment variable REMOTE_TOKEN to be set',
          message:
            'upstreams.remote.headers.Authorization: the environment variable REMOTE_TOKEN is not set (referenced as ${env:REMOTE_TOKEN})',
        },
      ],
    });
  });

  it('reports every missing variable in a string', () => {
    const result = interpolateEnv('${env:A}-${env:TOKEN}-${env:B}', env, path);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.errors.map((e) => e.variable)).toEqual(['A', 'B']);
  });

  it.each([
    ['${TOKEN}', '"${TOKEN}"'],
    ['${ENV:TOKEN}', '"${ENV:TOKEN}"'],
    ['${env:}', '"${env:}"'],
    ['${env:1X}', '"${env:1X}"'],
    ['${env:A-B}', '"${env:A-B}"'],
    ['${file:/etc/passwd}', '"${file:/etc/passwd}"'],
  ])('rejects the reference %j', (text, found) => {
    const result = interpolateEnv(text, env, path);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.errors[0]?.found).toBe(found);
      expect(result.errors[0]?.expected).toContain('${env:NAME}');
      expect(result.errors[0]?.expected).toContain('$${ for a literal ${');
      expect(result.errors[0]?.message).toContain(path);
    }
  });

  it('rejects an unclosed reference', () => {
    const result = interpolateEnv('x ${env:TOKEN', env, path);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.errors[0]?.found).toBe('an unclosed "${env:TOKEN"');
  });

  it('does not interpolate the values it inserts', () => {
    expect(interpolateEnv('${env:X}', { X: '${env:TOKEN}' }, path)).toEqual({
      ok: true,
      value: '${env:TOKEN}',
    });
  });
});

describe('escapeInterpolation', () => {
  it('escapes every ${', () => {
    expect(escapeInterpolation('a ${b} $${c}')).toBe('a $${b} $$${c}');
  });

  it('is undone by interpolation, for any string (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom('$', '{', '}', 'e', 'n', 'v', ':', 'X', ' ') }), (s) => {
        expect(interpolateEnv(escapeInterpolation(s), {}, 'k')).toEqual({ ok: true, value: s });
      }),
    );
    fc.assert(
      fc.property(fc.string(), (s) => {
        expect(interpolateEnv(escapeInterpolation(s), {}, 'k')).toEqual({ ok: true, value: s });
      }),
    );
  });
});
