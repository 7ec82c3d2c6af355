import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  anyCapabilityMatches,
  compileCapability,
  compileGlob,
  compileStringPattern,
  escapeLiteral,
  matchesCapability,
} from './capability-matcher.js';
import { type CapabilityPattern, parseCapability } from './capability-pattern.js';

const req = (payload: unknown) => ({ kind: 'mcp/request', payload });

describe('capability matching: the cases of the MEW reference matcher, in slash kinds', () => {
  it('matches an exact kind and nothing else', () => {
    expect(matchesCapability({ kind: 'mcp/request' }, req({}))).toBe(true);
    expect(matchesCapability({ kind: 'mcp/request' }, { kind: 'mcp/response', payload: {} })).toBe(false);
  });

  it('matches a kind from a one-of list', () => {
    const cap = { kind: ['mcp/request', 'mcp/proposal'] };
    expect(matchesCapability(cap, { kind: 'mcp/proposal', payload: {} })).toBe(true);
    expect(matchesCapability(cap, { kind: 'mcp/reject', payload: {} })).toBe(false);
  });

  it('matches wildcards in the kind and in payload fields', () => {
    expect(matchesCapability({ kind: 'mcp/*' }, req({}))).toBe(true);
    const cap = { kind: 'mcp/request', payload: { method: 'tools/*' } };
    expect(matchesCapability(cap, req({ method: 'tools/call' }))).toBe(true);
    expect(matchesCapability(cap, req({ method: 'resources/read' }))).toBe(false);
  });

  it('matches nested payload fields', () => {
    const cap = { kind: 'mcp/request', payload: { method: 'tools/call', params: { name: 'read_*' } } };
    expect(matchesCapability(cap, req({ method: 'tools/call', params: { name: 'read_file' } }))).toBe(true);
    expect(matchesCapability(cap, req({ method: 'tools/call', params: { name: 'write_file' } }))).toBe(false);
    // The nested field must be an object holding the field.
    expect(matchesCapability(cap, req({ method: 'tools/call', params: 'read_file' }))).toBe(false);
    expect(matchesCapability(cap, req({ method: 'tools/call' }))).toBe(false);
  });

  it('lets ** cross slashes where * does not', () => {
    const deep = { kind: 'mcp/request', payload: { params: { uri: '/public/**' } } };
    expect(matchesCapability(deep, req({ params: { uri: '/public/docs/readme.md' } }))).toBe(true);
    const shallow = { kind: 'mcp/request', payload: { params: { uri: '/public/*' } } };
    expect(matchesCapability(shallow, req({ params: { uri: '/public/docs/readme.md' } }))).toBe(false);
    expect(matchesCapability(shallow, req({ params: { uri: '/public/readme.md' } }))).toBe(true);
    expect(matchesCapability({ kind: '**' }, { kind: 'anything/at/all', payload: {} })).toBe(true);
    expect(matchesCapability({ kind: '*' }, { kind: 'mcp/request', payload: {} })).toBe(false);
  });

  it('negates with !', () => {
    const cap = { kind: 'mcp/request', payload: { method: 'tools/call', params: { name: '!delete_*' } } };
    expect(matchesCapability(cap, req({ method: 'tools/call', params: { name: 'read_file' } }))).toBe(true);
    expect(matchesCapability(cap, req({ method: 'tools/call', params: { name: 'delete_file' } }))).toBe(
      false,
    );
    const notCall = { kind: 'mcp/request', payload: { method: '!tools/call' } };
    expect(matchesCapability(notCall, req({ method: 'prompts/get' }))).toBe(true);
    expect(matchesCapability(notCall, req({ method: 'tools/call' }))).toBe(false);
    // A negation still needs the field, and a string pattern only matches strings.
    expect(matchesCapability(notCall, req({}))).toBe(false);
    expect(matchesCapability(notCall, req({ method: 7 }))).toBe(false);
  });

  it('matches /regex/ patterns', () => {
    const cap = {
      kind: 'mcp/request',
      payload: { params: { arguments: { query: '/^SELECT .* FROM public\\..*$/' } } },
    };
    const q = (query: string) => req({ params: { arguments: { query } } });
    expect(matchesCapability(cap, q('SELECT id, name FROM public.users'))).toBe(true);
    expect(matchesCapability(cap, q('DELETE FROM users'))).toBe(false);
    expect(matchesCapability({ kind: '/^CHAT$/i' }, { kind: 'chat', payload: {} })).toBe(true);
  });

  it('matches one-of lists in payload fields', () => {
    const cap = {
      kind: 'mcp/request',
      payload: { method: ['tools/call', 'tools/list'], params: { name: ['read_file', 'list_files'] } },
    };
    expect(matchesCapability(cap, req({ method: 'tools/call', params: { name: 'read_file' } }))).toBe(true);
    expect(matchesCapability(cap, req({ method: 'tools/call', params: { name: 'rm' } }))).toBe(false);
  });

  it('finds a value anywhere below with the ** key', () => {
    const cap = { kind: 'mcp/request', payload: { '**': 'sensitive_data' } };
    const deep = req({ method: 'tools/call', params: { nested: { deeply: [{ value: 'sensitive_data' }] } } });
    expect(matchesCapability(cap, deep)).toBe(true);
    expect(matchesCapability(cap, req({ method: 'tools/call' }))).toBe(false);
  });

  it('selects values with the JSONPath subset', () => {
    const name = { kind: 'mcp/request', payload: { '$.params.name': 'read_*' } };
    expect(matchesCapability(name, req({ method: 'tools/call', params: { name: 'read_file' } }))).toBe(true);
    expect(matchesCapability(name, req({ method: 'tools/call', params: {} }))).toBe(false);
    const each = { kind: 'stream/request', payload: { '$.operations[*].type': ['upload', 'download'] } };
    const ops = { operations: [{ type: 'upload' }, { type: 'close' }] };
    expect(matchesCapability(each, { kind: 'stream/request', payload: ops })).toBe(true);
    const first = { kind: 'x', payload: { '$.list[0]': 1, "$['odd key']": true } };
    expect(matchesCapability(first, { kind: 'x', payload: { list: [1, 2], 'odd key': true } })).toBe(true);
    expect(matchesCapability(first, { kind: 'x', payload: { list: [2, 1], 'odd key': true } })).toBe(false);
  });

  it('matches payload keys by glob, and numbers, booleans and null by equality', () => {
    const cap = { kind: 'x', payload: { 'arg_*': 5, flag: false, gone: null } };
    expect(matchesCapability(cap, { kind: 'x', payload: { arg_a: 5, flag: false, gone: null } })).toBe(true);
    expect(matchesCapability(cap, { kind: 'x', payload: { arg_a: '5', flag: false, gone: null } })).toBe(
      false,
    );
    expect(matchesCapability(cap, { kind: 'x', payload: { arg_a: 5, flag: 0, gone: null } })).toBe(false);
  });

  it('treats an empty payload pattern as any object payload', () => {
    expect(matchesCapability({ kind: 'chat', payload: {} }, { kind: 'chat', payload: { text: 'hi' } })).toBe(
      true,
    );
    expect(matchesCapability({ kind: 'chat', payload: {} }, { kind: 'chat', payload: 'hi' })).toBe(false);
  });

  it('allows a message when any capability matches', () => {
    const caps = [
      { kind: 'mcp/proposal' },
      { kind: 'mcp/request', payload: { method: 'resources/read' } },
      { kind: 'chat' },
    ].map(compileCapability);
    expect(anyCapabilityMatches(caps, req({ method: 'resources/read' }))).toBe(true);
    expect(anyCapabilityMatches(caps, req({ method: 'resources/write' }))).toBe(false);
    expect(anyCapabilityMatches([], { kind: 'chat', payload: {} })).toBe(false);
  });
});

describe('string patterns: properties', () => {
  const text = fc.string({ maxLength: 24 });
  const segment = fc.stringMatching(/^[a-z0-9_-]{1,6}$/);
  const path = fc.array(segment, { minLength: 1, maxLength: 5 }).map((s) => s.join('/'));

  it('an escaped literal matches exactly itself', () => {
    fc.assert(
      fc.property(text, text, (a, b) => {
        const match = compileStringPattern(escapeLiteral(a));
        expect(match(a)).toBe(true);
        expect(match(b)).toBe(a === b);
      }),
    );
  });

  it('escaped literals are valid patterns', () => {
    fc.assert(
      fc.property(
        text.filter((s) => s.length > 0),
        (a) => {
          expect(parseCapability({ kind: escapeLiteral(a) }, { allowRegex: false }).ok).toBe(true);
        },
      ),
    );
  });

  it('! negates any pattern', () => {
    fc.assert(
      fc.property(fc.oneof(path, fc.constantFrom('*', '**', 'a/*', '?', 'x*y')), path, (pattern, value) => {
        expect(compileStringPattern(`!${pattern}`)(value)).toBe(!compileStringPattern(pattern)(value));
      }),
    );
  });

  it('** matches every string; * matches exactly the strings without /', () => {
    fc.assert(
      fc.property(text, (value) => {
        expect(compileGlob('**')(value)).toBe(true);
        expect(compileGlob('*')(value)).toBe(!value.includes('/'));
      }),
    );
  });

  it('replacing a segment of a path by * keeps it matching, and the segment count must agree', () => {
    fc.assert(
      fc.property(fc.array(segment, { minLength: 1, maxLength: 5 }), fc.nat(), (segments, at) => {
        const i = at % segments.length;
        const glob = segments.map((s, j) => (j === i ? '*' : escapeLiteral(s))).join('/');
        expect(compileGlob(glob)(segments.join('/'))).toBe(true);
        expect(compileGlob(glob)(`${segments.join('/')}/extra`)).toBe(false);
        const prefix = `${segments.slice(0, i).map(escapeLiteral).join('/')}${i > 0 ? '/' : ''}**`;
        expect(compileGlob(prefix)(`${segments.join('/')}/extra`)).toBe(true);
      }),
    );
  });

  it('a one-of list matches what any of its members matches', () => {
    fc.assert(
      fc.property(fc.array(path, { minLength: 1, maxLength: 4 }), path, (options, kind) => {
        const list = matchesCapability({ kind: options.map(escapeLiteral) }, { kind, payload: {} });
        expect(list).toBe(options.includes(kind));
      }),
    );
  });
});

describe('payload patterns: properties', () => {
  const key = fc.stringMatching(/^[a-z][a-z0-9_]{0,5}$/);
  const scalar = fc.oneof(fc.string({ maxLength: 10 }), fc.integer(), fc.boolean(), fc.constant(null));
  const json = fc.letrec<{ value: unknown }>((tie) => ({
    value: fc.oneof(
      { depthSize: 'small' },
      scalar,
      fc.array(tie('value'), { maxLength: 3 }),
      fc.dictionary(key, tie('value'), { maxKeys: 4 }),
    ),
  })).value;
  const payload = fc.dictionary(key, json, { maxKeys: 5 });

  /** The pattern that pins every scalar of a payload to its value (lists become one-of of their items). */
  function pin(value: unknown): unknown {
    if (typeof value === 'string') return escapeLiteral(value) || '\\';
    if (Array.isArray(value)) return undefined;
    if (typeof value === 'object' && value !== null) {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) {
        const p = pin(v);
        if (p !== undefined) out[k] = p;
      }
      return out;
    }
    return value;
  }

  it('a payload matches the pattern that pins its own values (empty strings aside)', () => {
    fc.assert(
      fc.property(payload, (p) => {
        const hasEmpty = JSON.stringify(p).includes('""');
        fc.pre(!hasEmpty);
        const capability = { kind: 'k', payload: pin(p) } as CapabilityPattern;
        expect(parseCapability(capability, { allowRegex: false }).ok).toBe(true);
        expect(matchesCapability(capability, { kind: 'k', payload: p })).toBe(true);
      }),
    );
  });

  it('adding a key to a pattern never lets more payloads through', () => {
    fc.assert(
      fc.property(
        payload,
        key,
        fc.string({ maxLength: 5 }),
        payload,
        (base, extraKey, extraValue, subject) => {
          const loose = { kind: 'k', payload: pin(base) } as CapabilityPattern;
          const strict = {
            kind: 'k',
            payload: { ...(pin(base) as object), [extraKey]: escapeLiteral(extraValue) || '*' },
          } as CapabilityPattern;
          const s = { kind: 'k', payload: subject };
          if (matchesCapability(strict, s)) expect(matchesCapability(loose, s)).toBe(true);
        },
      ),
    );
  });

  it('the ** key finds a scalar wherever it is', () => {
    fc.assert(
      fc.property(payload, fc.array(key, { minLength: 1, maxLength: 4 }), (p, where) => {
        const needle = 'needle-value';
        let nested: unknown = needle;
        for (const k of [...where].reverse()) nested = { [k]: nested };
        const subject = { ...p, [where[0]!]: (nested as Record<string, unknown>)[where[0]!] };
        expect(
          matchesCapability({ kind: 'k', payload: { '**': needle } }, { kind: 'k', payload: subject }),
        ).toBe(true);
      }),
    );
  });
});

describe('parseCapability', () => {
  const ok = (raw: unknown, allowRegex = true) => parseCapability(raw, { allowRegex });

  it('reads the string shorthand, kind lists and payloads', () => {
    expect(ok('chat')).toEqual({ ok: true, capability: { kind: 'chat' } });
    expect(ok({ kind: ['a', 'b/*'] })).toEqual({ ok: true, capability: { kind: ['a', 'b/*'] } });
    expect(ok({ kind: 'mcp/request', payload: { method: 'tools/*', params: { name: ['a', 'b'] } } }).ok).toBe(
      true,
    );
  });

  it('refuses what is not a capability, naming where', () => {
    const problem = (raw: unknown, allowRegex = true) => {
      const r = parseCapability(raw, { allowRegex });
      return r.ok ? undefined : r.error;
    };
    expect(problem({})?.path).toBe('kind');
    expect(problem({ kind: 'a', extra: 1 })?.path).toBe('extra');
    expect(problem({ kind: '' })?.problem).toMatch(/empty/);
    expect(problem({ kind: [] })?.path).toBe('kind');
    expect(problem({ kind: 'a', payload: [] })?.path).toBe('payload');
    expect(problem({ kind: 'a', payload: { x: [] } })?.path).toBe('payload.x');
    expect(problem({ kind: 'a', payload: { x: { y: () => 1 } } })?.path).toBe('payload.x.y');
    expect(problem({ kind: '/(/' })?.problem).toMatch(/invalid regular expression/);
    expect(problem({ kind: 'a', payload: { x: '/a+/' } }, false)?.problem).toMatch(/configuration only/);
    expect(problem({ kind: '!/a+/' }, false)?.problem).toMatch(/configuration only/);
    expect(problem({ kind: 'a', payload: { '$..x': 1 } })?.problem).toMatch(/recursive descent/);
    expect(problem({ kind: 'a', payload: { '$.x[?(@.y)]': 1 } })?.problem).toMatch(/unsupported JSONPath/);
    expect(problem({ kind: 'a\\' })?.problem).toMatch(/unescaped/);
    expect(problem({ kind: '!!a' })?.problem).toMatch(/double negation/);
    expect(problem(42)?.path).toBe('');
  });

  it('bounds the size and depth of a pattern', () => {
    let deep: unknown = 'x';
    for (let i = 0; i < 80; i++) deep = { a: deep };
    const r = parseCapability({ kind: 'k', payload: deep }, { allowRegex: false });
    expect(r.ok).toBe(false);
    const wide = Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`k${i}`, 'v']));
    expect(parseCapability({ kind: 'k', payload: wide }, { allowRegex: false }).ok).toBe(false);
  });
});
