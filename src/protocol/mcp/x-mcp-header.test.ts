import { describe, expect, it } from 'vitest';
import {
  headerMatchesArgument,
  headerText,
  paramHeaderValues,
  scanToolHeaders,
  valueAt,
} from './x-mcp-header.js';

const schema = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  type: 'object',
  properties,
  ...extra,
});

describe('scanToolHeaders', () => {
  it('finds annotations on properties, nested ones included', () => {
    const scanned = scanToolHeaders(
      schema({
        region: { type: 'string', 'x-mcp-header': 'Region' },
        query: { type: 'string' },
        options: schema({ dryRun: { type: 'boolean', 'x-mcp-header': 'Dry-Run' } }),
        limit: { type: 'integer', 'x-mcp-header': 'Limit' },
      }),
    );
    expect(scanned).toEqual({
      ok: true,
      headers: [
        { path: ['region'], name: 'Region', type: 'string' },
        { path: ['options', 'dryRun'], name: 'Dry-Run', type: 'boolean' },
        { path: ['limit'], name: 'Limit', type: 'integer' },
      ],
    });
  });

  it('accepts tools without annotations, and odd schemas', () => {
    expect(scanToolHeaders(schema({ a: { type: 'string' } }))).toEqual({ ok: true, headers: [] });
    expect(scanToolHeaders(undefined)).toEqual({ ok: true, headers: [] });
    expect(scanToolHeaders({ type: 'object' })).toEqual({ ok: true, headers: [] });
  });

  it('reads a property named x-mcp-header as a name, and data keywords as data', () => {
    expect(
      scanToolHeaders(
        schema({
          'x-mcp-header': { type: 'string' },
          mode: { type: 'string', enum: [{ 'x-mcp-header': 'No' }], default: { 'x-mcp-header': 'No' } },
        }),
      ),
    ).toEqual({ ok: true, headers: [] });
  });

  it.each([
    ['on the root', { type: 'object', 'x-mcp-header': 'Root' }, /schema root/],
    [
      'under items',
      schema({ list: { type: 'array', items: { type: 'string', 'x-mcp-header': 'Item' } } }),
      /list\.<items>/,
    ],
    [
      'under anyOf',
      schema({}, { anyOf: [schema({ a: { type: 'string', 'x-mcp-header': 'A' } })] }),
      /<anyOf>/,
    ],
    ['under $defs', schema({}, { $defs: { d: { type: 'string', 'x-mcp-header': 'D' } } }), /<\$defs>/],
    [
      'under additionalProperties',
      schema({}, { additionalProperties: { type: 'string', 'x-mcp-header': 'X' } }),
      /additionalProperties/,
    ],
    ['on a number', schema({ n: { type: 'number', 'x-mcp-header': 'N' } }), /string, integer or boolean/],
    ['on an object', schema({ o: { type: 'object', 'x-mcp-header': 'O' } }), /string, integer or boolean/],
    ['without a type', schema({ u: { 'x-mcp-header': 'U' } }), /type is null/],
    ['with an empty name', schema({ a: { type: 'string', 'x-mcp-header': '' } }), /non-empty HTTP token/],
    ['with a space in the name', schema({ a: { type: 'string', 'x-mcp-header': 'A B' } }), /HTTP token/],
    ['with a CR LF in the name', schema({ a: { type: 'string', 'x-mcp-header': 'A\r\nB' } }), /HTTP token/],
    ['with a name that is not a string', schema({ a: { type: 'string', 'x-mcp-header': 7 } }), /HTTP token/],
    [
      'twice under names differing in case',
      schema({
        a: { type: 'string', 'x-mcp-header': 'Zone' },
        b: { type: 'string', 'x-mcp-header': 'ZONE' },
      }),
      /used twice/,
    ],
  ])('rejects an annotation %s', (_why, input, reason) => {
    const scanned = scanToolHeaders(input);
    expect(scanned.ok).toBe(false);
    if (!scanned.ok) expect(scanned.reason).toMatch(reason);
  });
});

describe('paramHeaderValues', () => {
  const headers = [
    { path: ['region'], name: 'Region', type: 'string' as const },
    { path: ['options', 'dryRun'], name: 'Dry-Run', type: 'boolean' as const },
    { path: ['limit'], name: 'Limit', type: 'integer' as const },
  ];

  it('mirrors present values, lower-cases the header name, encodes what needs it', () => {
    expect(paramHeaderValues(headers, { region: 'Zürich', options: { dryRun: false }, limit: 42 })).toEqual([
      {
        header: 'mcp-param-region',
        text: 'Zürich',
        value: `=?base64?${Buffer.from('Zürich').toString('base64')}?=`,
        type: 'string',
      },
      { header: 'mcp-param-dry-run', text: 'false', value: 'false', type: 'boolean' },
      { header: 'mcp-param-limit', text: '42', value: '42', type: 'integer' },
    ]);
  });

  it('omits absent, null and non-primitive values', () => {
    expect(paramHeaderValues(headers, { region: null, options: 'x', limit: [1] })).toEqual([]);
    expect(paramHeaderValues(headers, undefined)).toEqual([]);
  });

  it('converts primitives as the specification says', () => {
    expect(headerText(-7)).toBe('-7');
    expect(headerText(true)).toBe('true');
    expect(headerText(2 ** 53)).toBeUndefined();
    expect(headerText(Number.NaN)).toBeUndefined();
    expect(headerText({})).toBeUndefined();
  });
});

describe('valueAt and headerMatchesArgument (the server side)', () => {
  it('reads nested values', () => {
    expect(valueAt({ a: { b: 3 } }, ['a', 'b'])).toBe(3);
    expect(valueAt(undefined, ['a'])).toBeUndefined();
    expect(valueAt({ a: 'x' }, ['a', 'b'])).toBeUndefined();
  });

  it('compares by type: strings exactly, booleans as true/false, integers numerically', () => {
    expect(headerMatchesArgument('us-west1', 'us-west1', 'string')).toBe(true);
    expect(headerMatchesArgument('US-WEST1', 'us-west1', 'string')).toBe(false);
    expect(headerMatchesArgument('1', '1 ', 'string')).toBe(false);
    expect(headerMatchesArgument('42.0', 42, 'integer')).toBe(true);
    expect(headerMatchesArgument('', 0, 'integer')).toBe(false);
    expect(headerMatchesArgument('42', '42', 'integer')).toBe(false);
    expect(headerMatchesArgument('true', true, 'boolean')).toBe(true);
    expect(headerMatchesArgument('True', true, 'boolean')).toBe(false);
  });
});
