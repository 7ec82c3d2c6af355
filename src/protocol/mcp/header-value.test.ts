import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decodeHeaderValue,
  encodeHeaderValue,
  isSendableHeaderValue,
  needsSentinel,
  readHeaderValue,
} from './header-value.js';

const b64 = (text: string) => `=?base64?${Buffer.from(text, 'utf8').toString('base64')}?=`;

describe('encodeHeaderValue', () => {
  it('keeps plain printable ASCII as it is', () => {
    expect(encodeHeaderValue('eu-central-2')).toBe('eu-central-2');
    expect(encodeHeaderValue('a b=c?d')).toBe('a b=c?d');
    expect(encodeHeaderValue('file:///tmp/x.json')).toBe('file:///tmp/x.json');
  });

  it.each([
    ['non-ASCII', 'Grüße aus Köln'],
    ['a leading space', ' left'],
    ['a trailing space', 'right '],
    ['a newline', 'one\ntwo'],
    ['a tab', 'a\tb'],
    ['a NUL', 'a\u0000b'],
    ['the sentinel shape', '=?base64?abc?='],
    ['nothing at all', ''],
  ])('wraps a value with %s in the Base64 form', (_why, value) => {
    expect(needsSentinel(value)).toBe(true);
    expect(encodeHeaderValue(value)).toBe(b64(value));
  });

  it('leaves a value that only half looks like the sentinel form alone', () => {
    expect(encodeHeaderValue('=?base64?abc')).toBe('=?base64?abc');
    expect(encodeHeaderValue('abc?=')).toBe('abc?=');
  });
});

describe('decodeHeaderValue', () => {
  it('decodes the sentinel form and trims plain values', () => {
    expect(decodeHeaderValue(b64('Grüße'))).toBe('Grüße');
    expect(decodeHeaderValue('  plain\t')).toBe('plain');
    expect(decodeHeaderValue('=?base64?abc')).toBe('=?base64?abc');
    // Half a sentinel is a literal value (the conformance suite's "no prefix" and "no suffix").
    expect(decodeHeaderValue('SGVsbG8=')).toBe('SGVsbG8=');
    expect(decodeHeaderValue('=?base64?SGVsbG8=')).toBe('=?base64?SGVsbG8=');
  });

  it('refuses broken Base64 and bytes that are not UTF-8', () => {
    expect(decodeHeaderValue('=?base64?SGVsbG8?=')).toBeUndefined();
    expect(decodeHeaderValue('=?base64?SGVs!!!bG8=?=')).toBeUndefined();
    expect(decodeHeaderValue(`=?base64?${Buffer.from([0xff, 0xfe]).toString('base64')}?=`)).toBeUndefined();
  });

  it('round-trips every string (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (value) => {
        const encoded = encodeHeaderValue(value);
        expect(isSendableHeaderValue(encoded)).toBe(true);
        expect(decodeHeaderValue(encoded)).toBe(value);
      }),
    );
  });
});

describe('readHeaderValue (what a server receives)', () => {
  it('reads plain and sentinel values', () => {
    expect(readHeaderValue(' tools/call ')).toEqual({ ok: true, value: 'tools/call' });
    expect(readHeaderValue(b64('Hello, 世界'))).toEqual({ ok: true, value: 'Hello, 世界' });
  });

  it('refuses a broken sentinel and raw characters only the sentinel form may carry', () => {
    expect(readHeaderValue('=?base64?SGVsbG8?=').ok).toBe(false);
    expect(readHeaderValue('caf\u00e9').ok).toBe(false);
    expect(readHeaderValue('a\u0001b').ok).toBe(false);
  });
});
