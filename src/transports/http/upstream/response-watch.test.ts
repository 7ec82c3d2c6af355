import { describe, expect, it } from 'vitest';
import { findResponse, negotiatedVersion, responseIds } from './response-watch.js';

describe('findResponse', () => {
  it('finds the response to an id, whatever the key order', () => {
    expect(findResponse('{"result":{"a":1},"jsonrpc":"2.0","id":5}', 5)).toEqual({
      result: { a: 1 },
      jsonrpc: '2.0',
      id: 5,
    });
    expect(findResponse('{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"m"}}', 'x')).toMatchObject({
      id: 'x',
    });
  });

  it('tells 1 and "1" apart, and ignores requests and notifications', () => {
    expect(findResponse('{"jsonrpc":"2.0","id":"1","result":{}}', 1)).toBeUndefined();
    expect(findResponse('{"jsonrpc":"2.0","id":1,"method":"x","params":{"result":1}}', 1)).toBeUndefined();
    expect(
      findResponse('{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}', 1),
    ).toBeUndefined();
  });

  it('looks inside a batch, and survives text that is not JSON', () => {
    expect(
      findResponse('[{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":2,"result":null}]', 2),
    ).toEqual({ jsonrpc: '2.0', id: 2, result: null });
    expect(findResponse('{"result": oops', 2)).toBeUndefined();
  });
});

describe('responseIds', () => {
  it('lists the ids of the responses in a message or a batch', () => {
    expect(responseIds('{"jsonrpc":"2.0","id":3,"result":{}}')).toEqual([3]);
    expect(
      responseIds(
        '[{"jsonrpc":"2.0","id":"a","error":{}},{"jsonrpc":"2.0","id":4,"method":"x"},{"jsonrpc":"2.0","id":5,"result":1}]',
      ),
    ).toEqual(['a', 5]);
    expect(
      responseIds('{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"no result"}}'),
    ).toEqual([]);
    expect(responseIds('{"result"')).toEqual([]);
  });
});

describe('negotiatedVersion', () => {
  it('reads the protocol version of an initialize result', () => {
    expect(negotiatedVersion({ id: 1, result: { protocolVersion: '2025-06-18' } })).toBe('2025-06-18');
    expect(negotiatedVersion({ id: 1, error: { code: 1 } })).toBeUndefined();
    expect(negotiatedVersion({ id: 1, result: { protocolVersion: 7 } })).toBeUndefined();
  });
});
