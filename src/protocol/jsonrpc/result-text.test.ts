import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { resultTextOf } from './result-text.js';

const ids = fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.string());

describe('resultTextOf', () => {
  it('is JSON.stringify(result) for any JSON result and id (property)', () => {
    fc.assert(
      fc.property(ids, fc.jsonValue(), (id, result) => {
        const response = { jsonrpc: '2.0', id, result };
        expect(resultTextOf(JSON.stringify(response), response)).toBe(JSON.stringify(result));
      }),
    );
  });

  it('keeps strings that look like the envelope inside the result', () => {
    const response = {
      jsonrpc: '2.0',
      id: '"id":1}',
      result: { text: '{"jsonrpc":"2.0","id":1,"result":}' },
    };
    expect(resultTextOf(JSON.stringify(response), response)).toBe(JSON.stringify(response.result));
  });

  const refused: [string, object, string?][] = [
    ['an extra member after result', { jsonrpc: '2.0', id: 1, result: {}, extra: 1 }],
    ['members in another order', { id: 1, jsonrpc: '2.0', result: {} }],
    ['an error response', { jsonrpc: '2.0', id: 1, error: { code: 1, message: 'x' } }],
    ['a result that serialises to nothing', { jsonrpc: '2.0', id: 1, result: undefined }],
    ['a null id', { jsonrpc: '2.0', id: null, result: {} }],
    [
      'text that is not the response serialised',
      { jsonrpc: '2.0', id: 1, result: {} },
      '{"jsonrpc":"2.0","id":2,"result":{}}',
    ],
  ];
  it.each(refused)('gives undefined for %s', (_, response, text) => {
    expect(resultTextOf(text ?? JSON.stringify(response), response)).toBeUndefined();
  });
});
