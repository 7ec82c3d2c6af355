import { describe, expect, it } from 'vitest';
import type { JsonRpcMessage } from '../jsonrpc/types.js';
import { MODERN_META_KEYS } from './modern-meta.js';
import {
  gatewayMetaKeys,
  isGatewayMetaKey,
  isModernMetaKey,
  isModernOrGatewayMetaKey,
  metaOf,
  reservedMetaError,
  toLegacyWire,
  withoutGatewayMeta,
} from './reserved-meta.js';

/** What a 2026-07-28 client puts in every request's `_meta`. */
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'c', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': { sampling: {} },
  'io.modelcontextprotocol/logLevel': 'info',
};

function call(meta: Record<string, unknown>): JsonRpcMessage {
  return {
    jsonrpc: '2.0',
    id: 7,
    method: 'tools/call',
    params: { name: 'echo', arguments: { message: 'hi' }, _meta: meta },
  };
}

describe('reserved _meta keys', () => {
  it('are the 2026-07-28 envelope and what servers stamp, not progressToken or 2025 tasks', () => {
    expect([...MODERN_META_KEYS].sort()).toEqual([
      'io.modelcontextprotocol/clientCapabilities',
      'io.modelcontextprotocol/clientInfo',
      'io.modelcontextprotocol/logLevel',
      'io.modelcontextprotocol/protocolVersion',
      'io.modelcontextprotocol/serverInfo',
      'io.modelcontextprotocol/subscriptionId',
    ]);
    expect(isModernMetaKey('io.modelcontextprotocol/serverInfo')).toBe(true);
    expect(isModernMetaKey('switchboard.dev/forwardHeaders')).toBe(false);
    expect(isModernOrGatewayMetaKey('progressToken')).toBe(false);
    expect(isModernOrGatewayMetaKey('io.modelcontextprotocol/related-task')).toBe(false);
    expect(isModernOrGatewayMetaKey('traceparent')).toBe(false);
  });

  it("tells the gateway's namespace, whatever the case of the prefix", () => {
    expect(isGatewayMetaKey('switchboard.dev/forwardHeaders')).toBe(true);
    expect(isGatewayMetaKey('Switchboard.DEV/anything')).toBe(true);
    expect(isGatewayMetaKey('switchboard.dev')).toBe(false);
    expect(isGatewayMetaKey('example.com/switchboard.dev/x')).toBe(false);
    expect(isGatewayMetaKey('switchboard.devx/x')).toBe(false);
  });

  it('finds them in params._meta and in result._meta', () => {
    expect(
      gatewayMetaKeys(call({ 'switchboard.dev/a': 1, progressToken: 2, 'switchboard.dev/b': 3 })),
    ).toEqual(['switchboard.dev/a', 'switchboard.dev/b']);
    const result: JsonRpcMessage = { jsonrpc: '2.0', id: 1, result: { _meta: { 'switchboard.dev/x': 1 } } };
    expect(gatewayMetaKeys(result)).toEqual(['switchboard.dev/x']);
    expect(gatewayMetaKeys({ jsonrpc: '2.0', id: 1, error: { code: 1, message: 'm' } })).toEqual([]);
    expect(gatewayMetaKeys({ jsonrpc: '2.0', method: 'x', params: [1] })).toEqual([]);
    expect(metaOf({ jsonrpc: '2.0', method: 'x', params: { _meta: [] } })).toBeUndefined();
  });
});

describe('withoutGatewayMeta', () => {
  it("removes only the gateway's members, without touching the input", () => {
    const forged = call({ ...ENVELOPE, progressToken: 'p', 'switchboard.dev/forwardHeaders': { x: '1' } });
    const before = structuredClone(forged);
    const cleaned = withoutGatewayMeta(forged);
    expect(cleaned).toEqual(call({ ...ENVELOPE, progressToken: 'p' }));
    expect(forged).toEqual(before);
  });

  it('returns the same message when there is nothing to remove', () => {
    const plain = call({ progressToken: 1 });
    expect(withoutGatewayMeta(plain)).toBe(plain);
    const bare: JsonRpcMessage = { jsonrpc: '2.0', method: 'notifications/initialized' };
    expect(withoutGatewayMeta(bare)).toBe(bare);
  });
});

describe('toLegacyWire', () => {
  it('sends what a 2025 client would: no envelope, no gateway members; progressToken and the rest stay', () => {
    const message = call({
      ...ENVELOPE,
      progressToken: 'p-1',
      'io.modelcontextprotocol/related-task': { taskId: 't' },
      'example.com/trace': 'abc',
      'switchboard.dev/forwardHeaders': { 'mcp-param-region': 'eu' },
    });
    const wire = toLegacyWire(JSON.stringify(message), message);
    expect(JSON.parse(wire.json)).toEqual(wire.message);
    expect(wire.message).toEqual(
      call({
        progressToken: 'p-1',
        'io.modelcontextprotocol/related-task': { taskId: 't' },
        'example.com/trace': 'abc',
      }),
    );
  });

  it('leaves _meta out when nothing else was in it', () => {
    const message = call(ENVELOPE);
    const wire = toLegacyWire(JSON.stringify(message), message);
    expect(wire.message).toEqual({
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'echo', arguments: { message: 'hi' } },
    });
  });

  it('cleans results and notifications too', () => {
    const result: JsonRpcMessage = {
      jsonrpc: '2.0',
      id: 's-1',
      result: { action: 'accept', _meta: { 'io.modelcontextprotocol/serverInfo': {}, keep: 1 } },
    };
    expect(toLegacyWire(JSON.stringify(result), result).message).toEqual({
      jsonrpc: '2.0',
      id: 's-1',
      result: { action: 'accept', _meta: { keep: 1 } },
    });
    const cancelled: JsonRpcMessage = {
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 3, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } },
    };
    expect(toLegacyWire(JSON.stringify(cancelled), cancelled).message).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 3 },
    });
  });

  it("keeps params: a stateless retry's inputResponses reach the peer (a dual-era server reads them)", () => {
    const retry: JsonRpcMessage = {
      jsonrpc: '2.0',
      id: 8,
      method: 'tools/call',
      params: { name: 'echo', arguments: {}, inputResponses: { a: { action: 'accept' } }, _meta: ENVELOPE },
    };
    expect(toLegacyWire(JSON.stringify(retry), retry).message).toEqual({
      jsonrpc: '2.0',
      id: 8,
      method: 'tools/call',
      params: { name: 'echo', arguments: {}, inputResponses: { a: { action: 'accept' } } },
    });
  });

  it('keeps the very text (and object) of a message that has nothing to remove', () => {
    const text = '{"jsonrpc":"2.0", "id":1, "method":"tools/call","params":{"_meta":{"progressToken":1}}}';
    const message = JSON.parse(text) as JsonRpcMessage;
    const wire = toLegacyWire(text, message);
    expect(wire.json).toBe(text);
    expect(wire.message).toBe(message);
  });
});

describe('reservedMetaError', () => {
  it('is -32602 and names the members and the namespace', () => {
    expect(reservedMetaError(['switchboard.dev/forwardHeaders'])).toEqual({
      code: -32602,
      message:
        'Invalid params: _meta may not carry "switchboard.dev/forwardHeaders": the namespace switchboard.dev/ is reserved for the gateway',
    });
    const many = reservedMetaError([
      'switchboard.dev/a',
      'switchboard.dev/b',
      'switchboard.dev/c',
      'switchboard.dev/d',
    ]);
    expect(many.message).toContain('"switchboard.dev/c", ...:');
    expect(many.message).not.toContain('/d');
  });
});
