import { describe, expect, it } from 'vitest';
import { readInbound } from '../core/inbound.js';
import { Metrics } from '../observe/metrics.js';
import type { JsonRpcMessage } from '../protocol/jsonrpc/types.js';
import { reservedMetaError } from '../protocol/mcp/reserved-meta.js';
import { refusalOf, screenClientItem, screenClientPayload } from './client-meta.js';

const FORGED = { 'switchboard.dev/forwardHeaders': { 'mcp-param-region': 'eu' } };

function item(message: JsonRpcMessage) {
  return { kind: 'message' as const, message, raw: JSON.stringify(message) };
}

describe('screenClientItem', () => {
  it('turns a request carrying a gateway member into the error to answer it with', () => {
    const metrics = new Metrics();
    const request: JsonRpcMessage = {
      jsonrpc: '2.0',
      id: 'a',
      method: 'tools/call',
      params: { name: 'x', _meta: { ...FORGED, progressToken: 1 } },
    };
    expect(refusalOf(request)?.code).toBe(-32602);
    expect(screenClientItem(item(request), metrics, 'http')).toEqual({
      kind: 'reply',
      response: { jsonrpc: '2.0', id: 'a', error: reservedMetaError(['switchboard.dev/forwardHeaders']) },
    });
    expect(metrics.get('client_reserved_meta_total', { action: 'refused', transport: 'http' })).toBe(1);
  });

  it('removes them from notifications and responses, keeping the raw text', () => {
    const metrics = new Metrics();
    const note: JsonRpcMessage = {
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 1, _meta: FORGED },
    };
    const screened = screenClientItem(item(note), metrics, 'stdio');
    expect(screened).toEqual({
      kind: 'message',
      message: { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } },
      raw: JSON.stringify(note),
    });
    const response: JsonRpcMessage = { jsonrpc: '2.0', id: 3, result: { _meta: { 'SWITCHBOARD.DEV/x': 1 } } };
    expect(screenClientItem(item(response), metrics, 'stdio')).toMatchObject({
      kind: 'message',
      message: { jsonrpc: '2.0', id: 3, result: {} },
    });
    expect(metrics.get('client_reserved_meta_total', { action: 'removed', transport: 'stdio' })).toBe(2);
  });

  it('returns every other item as it is', () => {
    const metrics = new Metrics();
    const clean = item({ jsonrpc: '2.0', id: 1, method: 'ping', params: { _meta: { progressToken: 1 } } });
    expect(screenClientItem(clean, metrics, 'http')).toBe(clean);
    const payload = readInbound('{"jsonrpc":"2.0","id":1,"method":"ping"}', { allowBatch: false });
    expect(screenClientPayload(payload, metrics, 'http')).toBe(payload);
    expect(metrics.total('client_reserved_meta_total')).toBe(0);
  });

  it('screens each item of a batch', () => {
    const metrics = new Metrics();
    const payload = readInbound(
      JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'ping' },
        { jsonrpc: '2.0', id: 2, method: 'ping', params: { _meta: FORGED } },
      ]),
      { allowBatch: true },
    );
    const screened = screenClientPayload(payload, metrics, 'http');
    expect(screened.batch).toBe(true);
    expect(screened.items.map((i) => i.kind)).toEqual(['message', 'reply']);
  });
});
