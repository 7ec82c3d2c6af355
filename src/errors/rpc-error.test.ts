import { describe, expect, it } from 'vitest';
import { JsonRpcError, rejection } from './rpc-error.js';
import { SbErrorCode } from './switchboard-error.js';
import { gatewayError, rejectionAsJsonRpcError } from './to-jsonrpc-error.js';

describe('JsonRpcError', () => {
  const plain = gatewayError(SbErrorCode.UpstreamExited, 'upstream L exited', { upstream: 'L' });

  it('is an Error with a stack that names where it was made', () => {
    const error = rejection(plain);
    expect(error).toBeInstanceOf(Error);
    expect(error.stack).toContain('rpc-error.test.ts');
  });

  it('serialises as the plain JSON-RPC error object, and nothing else', () => {
    expect(JSON.parse(JSON.stringify(rejection(plain)))).toEqual(plain);
    expect(Object.keys(rejection(plain)).sort()).toEqual(['code', 'data', 'message']);
  });

  it('matches the plain object field by field', () => {
    expect(rejection(plain)).toMatchObject(plain);
    expect(Object.keys(rejection({ code: -32603, message: 'x' })).sort()).toEqual(['code', 'message']);
  });

  it('is not wrapped twice', () => {
    const error = new JsonRpcError(plain);
    expect(rejection(error)).toBe(error);
  });
});

describe('rejectionAsJsonRpcError', () => {
  it('copies a JsonRpcError to a plain object, so messages built from it stay plain data', () => {
    const plain = gatewayError(SbErrorCode.Internal, 'aborted');
    const copied = rejectionAsJsonRpcError(rejection(plain), () => plain);
    expect(copied).not.toBeInstanceOf(Error);
    expect(copied).toEqual(plain);
  });
});
