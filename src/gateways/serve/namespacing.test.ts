import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { exposedName, MAX_NAME_LENGTH, NameMap } from './namespacing.js';

describe('exposedName', () => {
  it('prefixes the server name', () => {
    expect(exposedName('everything', 'echo')).toBe('everything__echo');
  });

  it('keeps names within 64 characters, deterministically, with a hash for long ones', () => {
    const long = 'x'.repeat(80);
    const a = exposedName('srv', long);
    expect(a.length).toBe(MAX_NAME_LENGTH);
    expect(a).toBe(exposedName('srv', long));
    expect(a).not.toBe(exposedName('srv', `${long}y`));
    expect(a).toMatch(/^srv__x+_[a-z2-7]{6}$/);
  });

  it('never splits a surrogate pair', () => {
    const name = `${'a'.repeat(50)}😀😀😀😀😀😀😀😀`;
    const exposed = exposedName('s', name);
    expect(exposed.isWellFormed()).toBe(true);
    expect(exposed.length).toBeLessThanOrEqual(MAX_NAME_LENGTH);
  });

  it('is injective over (server, name) pairs in practice and always within bounds (property)', () => {
    const server = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/).filter((s) => !s.includes('__'));
    fc.assert(
      fc.property(
        server,
        fc.string({ minLength: 1, maxLength: 120 }),
        server,
        fc.string({ minLength: 1, maxLength: 120 }),
        (s1, n1, s2, n2) => {
          const a = exposedName(s1, n1);
          expect(a.length).toBeLessThanOrEqual(MAX_NAME_LENGTH);
          if (s1 !== s2 || n1 !== n2) expect(a).not.toBe(exposedName(s2, n2));
        },
      ),
    );
  });
});

describe('NameMap', () => {
  it('maps exposed names back to their upstream and original name', () => {
    const map = new NameMap(['everything', 'memory']);
    expect(map.resolve('memory__create_entities')).toEqual({ server: 'memory', name: 'create_entities' });
    expect(map.resolve('everything__get__sum')).toEqual({ server: 'everything', name: 'get__sum' });
  });

  it('refuses names of unknown servers and unknown truncated names', () => {
    const map = new NameMap(['a']);
    expect(map.resolve('b__tool')).toBeUndefined();
    expect(map.resolve('a__')).toBeUndefined();
    expect(map.resolve('plain')).toBeUndefined();
    const truncated = exposedName('a', 'y'.repeat(100));
    expect(map.resolve(truncated)).toBeUndefined();
    map.expose('a', 'y'.repeat(100));
    expect(map.resolve(truncated)).toEqual({ server: 'a', name: 'y'.repeat(100) });
  });

  it('round-trips every exposed name (property)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('alpha', 'b', 'srv-1'),
        fc.string({ minLength: 1, maxLength: 100 }),
        (server, name) => {
          const map = new NameMap(['alpha', 'b', 'srv-1']);
          expect(map.resolve(map.expose(server, name))).toEqual({ server, name });
        },
      ),
    );
  });
});
