import { describe, expect, it } from 'vitest';
import { JsonRpcCode } from '../protocol/jsonrpc/codes.js';
import { judgeOversized } from './oversized.js';

const error = {
  code: JsonRpcCode.MessageTooLarge,
  message: "message too large: 5000 bytes exceeds the gateway's limit of 1000 bytes",
  data: { code: 'SB_MESSAGE_TOO_LARGE', bytes: 5000, limit: 1000 },
};

describe('judgeOversized', () => {
  it('answers a request whose id can be read with -32006 for that id', () => {
    const verdict = judgeOversized(
      '{"jsonrpc":"2.0","id":"req-1","method":"tools/call","params":{"x":"aaaa',
      5000,
      1000,
    );
    expect(verdict).toEqual({ kind: 'request', reply: { jsonrpc: '2.0', id: 'req-1', error } });
  });

  it('sees a request even when "method" comes after "id"', () => {
    expect(judgeOversized('{"id":4,"jsonrpc":"2.0","method":"x","params":{', 5000, 1000).kind).toBe(
      'request',
    );
  });

  it('turns a result into an error response for the same id', () => {
    const verdict = judgeOversized('{"jsonrpc":"2.0","id":7,"result":{"content":[{"text":"aaaa', 5000, 1000);
    expect(verdict).toEqual({ kind: 'response', replacement: { jsonrpc: '2.0', id: 7, error } });
  });

  it('turns an oversized error response into a -32006 error for the same id', () => {
    const verdict = judgeOversized('{"jsonrpc":"2.0","id":8,"error":{"code":1,"message":"aaaa', 5000, 1000);
    expect(verdict).toEqual({ kind: 'response', replacement: { jsonrpc: '2.0', id: 8, error } });
  });

  it('can only log what has no readable id or no telling keys', () => {
    expect(
      judgeOversized('{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"aaa', 5000, 1000),
    ).toEqual({
      kind: 'unknown',
    });
    expect(judgeOversized('{"jsonrpc":"2.0","id":123', 5000, 1000)).toEqual({ kind: 'unknown' });
    expect(judgeOversized('{"jsonrpc":"2.0","id":1,"params":{"aaa', 5000, 1000)).toEqual({ kind: 'unknown' });
    expect(judgeOversized('not json at all', 5000, 1000)).toEqual({ kind: 'unknown' });
    expect(judgeOversized('', 5000, 1000)).toEqual({ kind: 'unknown' });
  });

  it('does not mistake nested "id" and "method" keys for the message\'s own', () => {
    expect(judgeOversized('{"jsonrpc":"2.0","params":{"id":1,"method":"x","aaa', 5000, 1000)).toEqual({
      kind: 'unknown',
    });
    expect(judgeOversized('{"jsonrpc":"2.0","id":2,"params":{"method":"x","result":1', 5000, 1000)).toEqual({
      kind: 'unknown',
    });
  });
});
