import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SwitchboardError } from '../errors/switchboard-error.js';
import {
  CIRCULAR_MARKER,
  canonicalize,
  MAX_DEPTH_MARKER,
  toWellFormedJson,
  UNSERIALIZABLE_MARKER,
} from './canonical-json.js';

function double(bits: string): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt(`0x${bits}`));
  return view.getFloat64(0);
}

function failure(value: unknown): { reason: unknown; path: unknown } {
  try {
    canonicalize(value);
  } catch (error) {
    expect(error).toBeInstanceOf(SwitchboardError);
    const details = (error as SwitchboardError).details ?? {};
    expect((error as SwitchboardError).code).toBe('SB_INTERNAL');
    return { reason: details.reason, path: details.path };
  }
  throw new Error('canonicalize did not throw');
}

describe('canonicalize: RFC 8785 vectors (tamper test 23)', () => {
  it('renders the RFC 8785 §3.2.2 sample', () => {
    const input = JSON.parse(
      '{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001,-0],' +
        '"string":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",' +
        '"literals":[null,true,false]}',
    );
    expect(canonicalize(input)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27,0],' +
        '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  // RFC 8785 Appendix B: IEEE 754 bit patterns and their canonical text.
  const appendixB: [string, string][] = [
    ['0000000000000000', '0'],
    ['8000000000000000', '0'],
    ['0000000000000001', '5e-324'],
    ['8000000000000001', '-5e-324'],
    ['7fefffffffffffff', '1.7976931348623157e+308'],
    ['ffefffffffffffff', '-1.7976931348623157e+308'],
    ['4340000000000000', '9007199254740992'],
    ['c340000000000000', '-9007199254740992'],
    ['4430000000000000', '295147905179352830000'],
    ['44b52d02c7e14af5', '9.999999999999997e+22'],
    ['44b52d02c7e14af6', '1e+23'],
    ['44b52d02c7e14af7', '1.0000000000000001e+23'],
    ['444b1ae4d6e2ef4e', '999999999999999700000'],
    ['444b1ae4d6e2ef4f', '999999999999999900000'],
    ['444b1ae4d6e2ef50', '1e+21'],
    ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
    ['3eb0c6f7a0b5ed8d', '0.000001'],
    ['41b3de4355555553', '333333333.3333332'],
    ['41b3de4355555554', '333333333.33333325'],
    ['41b3de4355555555', '333333333.3333333'],
    ['41b3de4355555556', '333333333.3333334'],
    ['41b3de4355555557', '333333333.33333343'],
    ['becbf647612f3696', '-0.0000033333333333333333'],
    ['43143ff3c1cb0959', '1424953923781206.2'],
  ];
  it.each(appendixB)('number 0x%s is %s', (bits, expected) => {
    expect(canonicalize(double(bits))).toBe(expected);
    expect(canonicalize([double(bits)])).toBe(`[${expected}]`);
  });

  it.each([
    ['7fffffffffffffff', 'NaN'],
    ['7ff0000000000000', 'Infinity'],
  ])('number 0x%s (%s) is an error', (bits) => {
    expect(failure(double(bits)).reason).toBe('non_finite_number');
  });

  it('sorts members by UTF-16 code units (RFC 8785 §3.2.3 example)', () => {
    const input = {
      '\u20ac': 'Euro Sign',
      '\r': 'Carriage Return',
      '\ufb33': 'Hebrew Letter Dalet With Dagesh',
      '1': 'One',
      '\ud83d\ude00': 'Emoji: Grinning Face',
      '\u0080': 'Control',
      '\u00f6': 'Latin Small Letter O With Diaeresis',
    };
    expect(canonicalize(input)).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
        '"\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
  });

  it('sorts nested objects and keeps array order', () => {
    expect(canonicalize({ b: [3, { z: 1, a: 2 }, 1], a: { d: null, c: true } })).toBe(
      '{"a":{"c":true,"d":null},"b":[3,{"a":2,"z":1},1]}',
    );
  });

  it('orders a supplementary-plane name before U+E000..U+FFFF (unlike code point order)', () => {
    expect(canonicalize({ '\uffff': 1, '\u{10000}': 2 })).toBe('{"\u{10000}":2,"\uffff":1}');
  });
});

describe('canonicalize: strings', () => {
  it('escapes control characters minimally, with lowercase hex', () => {
    let input = '';
    for (let c = 0; c < 0x20; c++) input += String.fromCharCode(c);
    expect(canonicalize(input)).toBe(
      '"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r\\u000e\\u000f' +
        '\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\\u0019\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f"',
    );
  });

  it('escapes only the quote and the backslash among printable ASCII', () => {
    expect(canonicalize('a"b\\c/d\'e')).toBe('"a\\"b\\\\c/d\'e"');
  });

  it('writes DEL, U+2028, U+2029, non-ASCII and emoji as they are', () => {
    expect(canonicalize('\u007f\u2028\u2029é€😀')).toBe('"\u007f\u2028\u2029é€😀"');
  });
});

describe('canonicalize: JSON.stringify compatibility', () => {
  it('drops undefined, function and symbol members, and writes null for them in arrays', () => {
    expect(canonicalize({ a: undefined, b: () => 1, c: Symbol('s'), d: 1 })).toBe('{"d":1}');
    expect(canonicalize([undefined, () => 1, Symbol('s')])).toBe('[null,null,null]');
  });

  it('honours toJSON, passing the member name', () => {
    const seen: string[] = [];
    const value = {
      toJSON(key: string) {
        seen.push(key);
        return { z: 1, a: 'x' };
      },
    };
    expect(canonicalize({ when: new Date(Date.UTC(2026, 5, 14, 12, 0, 0, 5)), v: value })).toBe(
      '{"v":{"a":"x","z":1},"when":"2026-06-14T12:00:00.005Z"}',
    );
    expect(seen).toEqual(['v']);
  });

  it('unwraps boxed primitives', () => {
    expect(canonicalize([new Number(1.5), new String('s'), new Boolean(false)])).toBe('[1.5,"s",false]');
  });

  it('writes -0 as 0 and ignores symbol keys', () => {
    expect(canonicalize({ n: -0, [Symbol('k')]: 1 })).toBe('{"n":0}');
  });

  it('accepts shared, non-cyclic references', () => {
    const shared = { x: 1 };
    expect(canonicalize({ a: shared, b: [shared, shared] })).toBe('{"a":{"x":1},"b":[{"x":1},{"x":1}]}');
  });

  it('keeps a "__proto__" member parsed from JSON', () => {
    expect(canonicalize(JSON.parse('{"__proto__":{"a":1},"b":2}'))).toBe('{"__proto__":{"a":1},"b":2}');
  });
});

describe('canonicalize: errors (tamper test 23)', () => {
  it('rejects NaN and both infinities, naming the path', () => {
    expect(failure(Number.NaN)).toEqual({ reason: 'non_finite_number', path: '' });
    expect(failure({ a: [1, Number.POSITIVE_INFINITY] })).toEqual({
      reason: 'non_finite_number',
      path: '/a/1',
    });
    expect(failure({ 'x/y~z': Number.NEGATIVE_INFINITY })).toEqual({
      reason: 'non_finite_number',
      path: '/x~1y~0z',
    });
  });

  it('rejects lone surrogates in strings and in member names', () => {
    expect(failure('\ud800')).toEqual({ reason: 'lone_surrogate', path: '' });
    expect(failure({ s: 'a\udc00b' })).toEqual({ reason: 'lone_surrogate', path: '/s' });
    expect(failure(['\ude00\ud83d'])).toEqual({ reason: 'lone_surrogate', path: '/0' });
    expect(failure({ 'k\ud83d': 1 }).reason).toBe('lone_surrogate');
  });

  it('rejects BigInt, boxed or not', () => {
    expect(failure(1n).reason).toBe('bigint');
    expect(failure({ n: Object(2n) })).toEqual({ reason: 'bigint', path: '/n' });
  });

  it('rejects undefined, functions and symbols at the top level', () => {
    expect(failure(undefined).reason).toBe('unsupported_type');
    expect(failure(() => 1).reason).toBe('unsupported_type');
    expect(failure(Symbol('s')).reason).toBe('unsupported_type');
  });

  it('rejects cycles through objects and arrays', () => {
    const object: Record<string, unknown> = { a: 1 };
    object.self = object;
    expect(failure(object)).toEqual({ reason: 'cycle', path: '/self' });
    const array: unknown[] = [1];
    array.push({ back: array });
    expect(failure(array)).toEqual({ reason: 'cycle', path: '/1/back' });
  });

  it('wraps a throwing getter or toJSON, keeping the cause', () => {
    const cause = new Error('boom');
    const value = {
      get bad(): unknown {
        throw cause;
      },
    };
    expect(failure(value)).toEqual({ reason: 'threw', path: '/bad' });
    try {
      canonicalize({
        toJSON() {
          throw cause;
        },
      });
    } catch (error) {
      expect((error as SwitchboardError).cause).toBe(cause);
    }
  });

  it('reports a stack overflow on absurd nesting as too_deep', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(failure(deep).reason).toBe('too_deep');
  });
});

describe('canonicalize: golden bytes (tamper test 24)', () => {
  // A fixed audit record in the shape of audit.md §6. The expected text and hash below are
  // committed: any change to canonicalization must show up here as a diff. Cross-checked with
  // Python json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False), which produces
  // the same bytes except "1e-07" for 1e-7 (the float-format pitfall of audit.md §4); with that
  // one token fixed, Python's hashlib gives the same SHA-256.
  const record = {
    v: 1,
    seq: 42,
    ts: '2026-06-14T12:34:56.789Z',
    tool: 'fs.read_file',
    target: null,
    tier: 'T1',
    decision: 'allowed',
    args: {
      path: '/etc/hosts',
      limit: 1e21,
      ratio: 0.1,
      small: 1e-7,
      neg: -42.5,
      nested: { é: 'café', '\u2028': 'line\nsep\t"quoted"', z: [true, false, null], A: {} },
      emoji: '😀',
      empty: [],
    },
    output_sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    output_len: 0,
    error: null,
    request_id: '7',
    client_id: null,
    policy_version: 'p-2026.1',
    prev_hash: '0'.repeat(64),
  };
  const golden =
    '{"args":{"emoji":"😀","empty":[],"limit":1e+21,"neg":-42.5,' +
    '"nested":{"A":{},"z":[true,false,null],"é":"café","\u2028":"line\\nsep\\t\\"quoted\\""},' +
    '"path":"/etc/hosts","ratio":0.1,"small":1e-7},"client_id":null,"decision":"allowed","error":null,' +
    '"output_len":0,"output_sha256":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",' +
    '"policy_version":"p-2026.1","prev_hash":"0000000000000000000000000000000000000000000000000000000000000000",' +
    '"request_id":"7","seq":42,"target":null,"tier":"T1","tool":"fs.read_file","ts":"2026-06-14T12:34:56.789Z","v":1}';

  it('renders the fixed record byte for byte', () => {
    expect(canonicalize(record)).toBe(golden);
  });

  it('hashes the fixed record to the committed SHA-256', () => {
    const digest = createHash('sha256').update(canonicalize(record), 'utf8').digest('hex');
    expect(digest).toBe('a81c83a37b9bc41b945832a2f512eaea81c36f1beae1772994ff26535d284c8a');
  });

  it('does not depend on member insertion order', () => {
    const reversed = Object.fromEntries(Object.entries(record).reverse());
    expect(canonicalize(reversed)).toBe(golden);
  });
});

describe('canonicalize: properties', () => {
  it('round-trips through JSON.parse and is a fixed point', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = canonicalize(value);
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(value)));
        expect(canonicalize(JSON.parse(text))).toBe(text);
      }),
      { numRuns: 300 },
    );
  });

  it('agrees with JSON.stringify on values whose keys are already sorted', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.string())),
        (value) => {
          expect(canonicalize(value)).toBe(JSON.stringify(value));
        },
      ),
    );
  });
});

describe('toWellFormedJson', () => {
  it('repairs lone surrogates in strings and names, non-finite numbers and BigInt', () => {
    const repaired = toWellFormedJson({
      'k\ud800': 'a\udc00',
      n: [Number.NaN, Number.NEGATIVE_INFINITY, 1],
      b: 12n,
    });
    expect(repaired).toEqual({ 'k\ufffd': 'a\ufffd', n: [null, null, 1], b: '12' });
    expect(canonicalize(repaired)).toBe('{"b":"12","k\ufffd":"a\ufffd","n":[null,null,1]}');
  });

  it('cuts cycles but copies shared references', () => {
    const shared = { s: 1 };
    const root: Record<string, unknown> = { shared, again: shared };
    root.self = root;
    expect(toWellFormedJson(root)).toEqual({ shared: { s: 1 }, again: { s: 1 }, self: CIRCULAR_MARKER });
  });

  it('replaces what throws and what is too deep', () => {
    const hostile = {
      get bad(): unknown {
        throw new Error('no');
      },
      proxy: new Proxy(
        {},
        {
          ownKeys() {
            throw new Error('trap');
          },
        },
      ),
      ok: 1,
    };
    expect(toWellFormedJson(hostile)).toEqual({
      bad: UNSERIALIZABLE_MARKER,
      proxy: UNSERIALIZABLE_MARKER,
      ok: 1,
    });
    expect(toWellFormedJson({ a: { b: { c: 1 } } }, { maxDepth: 2 })).toEqual({ a: { b: MAX_DEPTH_MARKER } });
  });

  it('behaves like JSON.stringify for undefined, functions, symbols, toJSON and boxes', () => {
    expect(toWellFormedJson(undefined)).toBeNull();
    expect(toWellFormedJson({ a: undefined, f: () => 1, arr: [undefined, Symbol('x')] })).toEqual({
      arr: [null, null],
    });
    expect(toWellFormedJson({ d: new Date(0), n: new Number(2), big: Object(3n) })).toEqual({
      d: '1970-01-01T00:00:00.000Z',
      n: 2,
      big: '3',
    });
  });

  it('does not mutate its input and keeps "__proto__" as a member', () => {
    const input = JSON.parse('{"__proto__":{"x":"\\ud800"},"y":[1]}');
    const before = JSON.stringify(input);
    const out = toWellFormedJson(input) as Record<string, unknown>;
    expect(JSON.stringify(input)).toBe(before);
    expect(Object.keys(out)).toEqual(['__proto__', 'y']);
    expect(canonicalize(out)).toBe('{"__proto__":{"x":"\ufffd"},"y":[1]}');
  });

  it('never throws, and its result is always canonicalizable', () => {
    fc.assert(
      fc.property(
        fc.anything({
          withBigInt: true,
          withBoxedValues: true,
          withDate: true,
          withMap: true,
          withSet: true,
          withNullPrototype: true,
          withObjectString: true,
          withSparseArray: true,
          withTypedArray: true,
          stringUnit: 'binary',
          key: fc.string({ unit: 'binary' }),
        }),
        (value) => {
          const repaired = toWellFormedJson(value);
          expect(() => canonicalize(repaired)).not.toThrow();
        },
      ),
      { numRuns: 500 },
    );
  });

  it('leaves well-formed JSON values unchanged', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(canonicalize(toWellFormedJson(value))).toBe(canonicalize(value));
      }),
    );
  });
});
