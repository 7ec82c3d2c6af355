import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isTruncatedPayload, rpcSummary, storedPayload } from './stored-payload.js';
import { traceRecord } from './trace-store.contract.js';

describe('storedPayload', () => {
  it('reuses payloadJson verbatim instead of stringifying the payload', () => {
    const record = traceRecord({ id: 'A', payload: { a: 1 }, payloadJson: '{"a":1 }' });
    expect(storedPayload(record, 1024)).toEqual({ text: '{"a":1 }', replaced: false });
    expect(storedPayload(traceRecord({ id: 'A', payload: { a: 1 } }), 1024)).toEqual({
      text: '{"a":1}',
      replaced: false,
    });
  });

  it('counts UTF-8 bytes, not characters, against the limit', () => {
    const payload = { t: 'ü'.repeat(10) };
    const json = JSON.stringify(payload);
    expect(Buffer.byteLength(json)).toBe(json.length + 10);
    expect(storedPayload(traceRecord({ id: 'A', payload }), json.length + 10).replaced).toBe(false);
    const over = storedPayload(traceRecord({ id: 'A', payload }), json.length + 9);
    expect(over.replaced).toBe(true);
    const marker = JSON.parse(over.text) as unknown;
    expect(marker).toEqual({
      _truncated: true,
      bytes: json.length + 10,
      sha256: createHash('sha256').update(json, 'utf8').digest('hex'),
    });
    expect(isTruncatedPayload(marker)).toBe(true);
    expect(isTruncatedPayload({ jsonrpc: '2.0' })).toBe(false);
  });

  it('turns an unserializable payload into a marker instead of throwing', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const base = traceRecord({ id: 'A' });
    const withPayload = (payload: unknown) =>
      ({ ...base, envelope: { ...base.envelope, payload } }) as typeof base;
    for (const payload of [cyclic, { n: 1n }, undefined]) {
      const out = storedPayload(withPayload(payload), 1024);
      expect(out.replaced).toBe(true);
      expect(JSON.parse(out.text)).toMatchObject({ _unserializable: true, error: expect.any(String) });
    }
  });
});

describe('rpcSummary', () => {
  it('extracts the method and the id as JSON text', () => {
    expect(rpcSummary({ jsonrpc: '2.0', id: 7, method: 'tools/call' })).toEqual({
      method: 'tools/call',
      rpcId: '7',
    });
    expect(rpcSummary({ jsonrpc: '2.0', id: '7', result: {} })).toEqual({ rpcId: '"7"' });
    expect(rpcSummary({ jsonrpc: '2.0', id: null, error: {} })).toEqual({ rpcId: 'null' });
    expect(rpcSummary({ jsonrpc: '2.0', method: 'notifications/progress' })).toEqual({
      method: 'notifications/progress',
    });
    expect(rpcSummary({ id: { nested: true }, method: 3 })).toEqual({});
    expect(rpcSummary(null)).toEqual({});
  });
});
