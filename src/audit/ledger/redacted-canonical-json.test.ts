import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createRedactor, type RedactorOptions } from '../redaction.js';
import { canonicalRepairedJson } from './canonical-record.js';
import { createRedactedCanonicalJson } from './redacted-canonical-json.js';

/** Redactor configurations: built-in rules, extra names and shapes, a small depth, kept names. */
const CONFIGS: readonly RedactorOptions[] = [
  {},
  { extraKeyPatterns: ['ssn', /^x-/i] },
  { extraValuePatterns: [/\d{3}-\d{2}-\d{4}/g] },
  { maxDepth: 3 },
  { keepKeys: ['progressToken'] },
];

/** Names and texts the redactor acts on (or nearly does), mixed into random data. */
const SECRETISH = [
  'password',
  'api_key',
  'apiKey',
  'token',
  'progressToken',
  'max_tokens',
  'Authorization',
  'ssn',
  'x-custom',
  'session',
  'Bearer abcdefghijklmnop',
  `ghp_${'a'.repeat(36)}`,
  'postgres://user:pw@host/db',
  'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln',
  '123-45-6789',
  'key',
  'a\ud800b',
  '__proto__',
  '10',
  '2',
  'a"b',
  'line\nbreak',
  '\u2028',
];

const text = fc.oneof(fc.string({ unit: 'binary', maxLength: 12 }), fc.constantFrom(...SECRETISH));

const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    text,
    fc.double(),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    tie('array'),
    tie('object'),
    fc.tuple(fc.constantFrom(...SECRETISH), text),
  ),
  array: fc.array(tie('value'), { maxLength: 4 }),
  object: fc.dictionary(text, tie('value'), { maxKeys: 5 }),
})).value;

function general(options: RedactorOptions): (value: unknown) => string {
  const redactor = createRedactor(options);
  return (value) => canonicalRepairedJson(redactor(value));
}

describe('createRedactedCanonicalJson', () => {
  it('equals canonicalRepairedJson(redactor(value)) for JSON data with secret-looking names and texts', () => {
    for (const options of CONFIGS) {
      const fast = createRedactedCanonicalJson(options).encode;
      const slow = general(options);
      fc.assert(
        fc.property(json, (value) => {
          expect(fast(value)).toBe(slow(value));
        }),
        { numRuns: 300 },
      );
    }
  });

  it('equals the general path for anything JavaScript holds', () => {
    for (const options of CONFIGS) {
      const fast = createRedactedCanonicalJson(options).encode;
      const slow = general(options);
      fc.assert(
        fc.property(
          fc.anything({
            withBigInt: true,
            withBoxedValues: true,
            withMap: true,
            withSet: true,
            withDate: true,
            withNullPrototype: true,
            withSparseArray: true,
            withObjectString: true,
            withTypedArray: true,
          }),
          (value) => {
            expect(fast(value)).toBe(slow(value));
          },
        ),
        { numRuns: 200 },
      );
    }
  });

  it('gives up where the general path differs: cycles, depth, toJSON, getters, proxies, pairs, odd names', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    const throwing = Object.defineProperty({ a: 1 }, 'b', {
      enumerable: true,
      get() {
        throw new Error('no');
      },
    });
    let deep: unknown = 'bottom';
    for (let i = 0; i < 40; i++) deep = { d: deep };
    const cases: unknown[] = [
      cyclic,
      [cyclic, cyclic],
      deep,
      { date: new Date(0) },
      { toJSON: () => 'x' },
      throwing,
      new Proxy({ a: 1 }, {}),
      new Proxy(
        { a: 1 },
        {
          ownKeys() {
            throw new Error('trap');
          },
        },
      ),
      [
        ['authorization', 'Basic abc'],
        ['accept', 'json'],
      ],
      ['password', 'hunter2'],
      { password: null, token: undefined, ok: 'yes' },
      JSON.parse('{"__proto__":{"x":1},"a":2}'),
      { '10': 1, '2': 2, b: 3 },
      // UTF-16 code unit order, not code point order: U+1F600 (a surrogate pair) sorts before U+FFFF.
      { '\uffff': 1, '😀': 2, z: 3, Z: 4, é: 5 },
      // More members than the insertion sort takes.
      Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${19 - i}`, i])),
      { 'a\ud800': 1, 'a\ufffd': 2 },
      { a: undefined, b: () => 1, c: Symbol('s'), d: 10n },
      [1, undefined, () => 1],
      { n: [Number.NaN, Number.POSITIVE_INFINITY, -0, 1e21, 1e-7, 0.1] },
      { s: 'x\ud800', t: 'ctl\u0001', u: '\u2028', v: 'q"\\' },
      Object.create(null),
      'top-level string',
      'Bearer abcdefghijklmnop',
      42,
      null,
      () => 1,
    ];
    for (const options of CONFIGS) {
      const fast = createRedactedCanonicalJson(options).encode;
      const slow = general(options);
      for (const value of cases) expect(fast(value)).toBe(slow(value));
    }
  });

  it('redacts through the general path and writes plain data directly', () => {
    const { encode } = createRedactedCanonicalJson();
    expect(encode({ path: '/srv/a.txt', lines: 3, encoding: 'utf8' })).toBe(
      '{"encoding":"utf8","lines":3,"path":"/srv/a.txt"}',
    );
    expect(encode({ password: 'hunter2', user: 'ann' })).toBe('{"password":"[REDACTED]","user":"ann"}');
  });
});
