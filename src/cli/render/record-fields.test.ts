import { describe, expect, it } from 'vitest';
import { traceRecord } from '../../trace/trace-store.contract.js';
import {
  answeredRequest,
  byteSize,
  clockTime,
  contextDepth,
  dateTime,
  directionArrow,
  duration,
  hopText,
  indexById,
  kindCell,
  methodText,
  rpcIdText,
  shortId,
  shownMethod,
  summaryLine,
} from './record-fields.js';
import { createStyle } from './style.js';

const plain = createStyle(false);
const at = Date.UTC(2026, 4, 6, 7, 8, 9, 123);

describe('record fields', () => {
  it('formats times in UTC and durations and sizes for humans', () => {
    expect(clockTime(at)).toBe('07:08:09.123');
    expect(dateTime(at)).toBe('2026-05-06 07:08:09');
    expect([0.421, 12.34, 1250, 125_000, 3_725_000, -1].map(duration)).toEqual([
      '0.42ms',
      '12.3ms',
      '1.25s',
      '2m05s',
      '1h02m',
      '-',
    ]);
    expect([512, 1536, 2 * 1024 * 1024].map(byteSize)).toEqual(['512 B', '1.5 KiB', '2.0 MiB']);
  });

  it('draws an arrow per direction', () => {
    expect(
      ['client->server', 'server->client', 'internal', 'unknown'].map((d) => directionArrow(d as never)),
    ).toEqual(['→', '←', '·', '?']);
  });

  it('names kinds, telling error responses apart', () => {
    const kind = (k: 'mcp/request' | 'mcp/response' | 'mcp/notification', payload = {}) =>
      kindCell(traceRecord({ id: 'A', kind: k, payload }), plain).text;
    expect(kind('mcp/request')).toBe('request');
    expect(kind('mcp/notification')).toBe('notification');
    expect(kind('mcp/response', { jsonrpc: '2.0', id: 1, result: {} })).toBe('response');
    expect(kind('mcp/response', { jsonrpc: '2.0', id: 1, error: { code: -1, message: 'x' } })).toBe('error');
  });

  it('reads the JSON-RPC method and id, keeping 7 and "7" distinct, and notes a truncated payload', () => {
    expect(rpcIdText(traceRecord({ id: 'A', payload: { jsonrpc: '2.0', id: 7, method: 'm' } }))).toBe('7');
    expect(rpcIdText(traceRecord({ id: 'A', payload: { jsonrpc: '2.0', id: '7', method: 'm' } }))).toBe(
      '"7"',
    );
    expect(rpcIdText(traceRecord({ id: 'A', payload: { jsonrpc: '2.0', method: 'm' } }))).toBe('');
    expect(
      methodText(traceRecord({ id: 'A', payload: { _truncated: true, bytes: 3_000_000, sha256: 'ab' } })),
    ).toBe('(truncated, 2.9 MiB)');
  });

  it('shows the hop, the context depth and short ids', () => {
    expect(hopText(traceRecord({ id: 'A', from: 'gateway', to: ['server-a', 'server-b'] }))).toBe(
      'gateway → server-a,server-b',
    );
    expect(hopText(traceRecord({ id: 'A' }))).toBe('client-s1 → *');
    expect([undefined, '', 's', 's/a/b'].map(contextDepth)).toEqual([0, 0, 1, 3]);
    expect(shortId('01JD0000000000000000ABCDEF')).toBe('…00ABCDEF');
    expect(shortId('short')).toBe('short');
  });

  it('finds the request a response answers, skipping the upstream response it also names', () => {
    const request = traceRecord({ id: 'REQ', payload: { jsonrpc: '2.0', id: 1, method: 'tools/call' } });
    const upstream = traceRecord({
      id: 'UR',
      kind: 'mcp/response',
      payload: { jsonrpc: '2.0', id: 1, result: {} },
    });
    const response = traceRecord({
      id: 'R',
      kind: 'mcp/response',
      correlationId: ['UR', 'REQ'],
      payload: { jsonrpc: '2.0', id: 1, result: {} },
    });
    const known = indexById([request, upstream, response]);
    expect(answeredRequest(response, known)).toBe(request);
    expect(answeredRequest(request, known)).toBeUndefined();
    expect(shownMethod(response, known)).toBe('(tools/call)');
    expect(shownMethod(response, new Map())).toBe('');
    expect(summaryLine(response, plain, known)).toBe(
      `${clockTime(response.receivedAt)} → response (tools/call) id=1  client-s1 → *  R`,
    );
  });
});
