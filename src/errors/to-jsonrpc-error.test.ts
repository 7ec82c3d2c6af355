import { describe, expect, it } from 'vitest';
import { JsonRpcCode } from '../protocol/jsonrpc/codes.js';
import { SbErrorCode, SwitchboardError } from './switchboard-error.js';
import { gatewayError, rejectionAsJsonRpcError } from './to-jsonrpc-error.js';

describe('rejectionAsJsonRpcError', () => {
  const fallback = () => gatewayError(SbErrorCode.Internal, 'fallback');

  it("gives a SwitchboardError's wire form, with its code and details", () => {
    const thrown = new SwitchboardError(SbErrorCode.LimitExceeded, 'all busy', { details: { max: 2 } });
    expect(rejectionAsJsonRpcError(thrown, fallback)).toEqual({
      code: JsonRpcCode.LimitExceeded,
      message: 'all busy',
      data: { code: 'SB_LIMIT_EXCEEDED', max: 2 },
    });
  });

  it('passes a JSON-RPC error object through as it is (an upstream answer, a foreign resolver)', () => {
    const upstream = { code: -32602, message: 'bad params', data: { field: 'x' } };
    expect(rejectionAsJsonRpcError(upstream, fallback)).toBe(upstream);
  });

  it('never puts anything else on the wire: the fallback instead of the thrown text', () => {
    for (const thrown of [new Error('secret path /etc/x'), 'text', undefined, { code: '1', message: 'm' }]) {
      expect(rejectionAsJsonRpcError(thrown, fallback)).toMatchObject({ message: 'fallback' });
    }
  });
});
