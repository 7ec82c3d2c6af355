import { describe, expect, it } from 'vitest';
import { withTraceHeaders } from './trace-headers.js';

const TP = `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`;
const base = { authorization: 'Bearer x' };

function call(meta: unknown) {
  return { jsonrpc: '2.0' as const, id: 1, method: 'tools/call', params: { name: 't', _meta: meta } };
}

describe('withTraceHeaders', () => {
  it('mirrors _meta.traceparent and tracestate into the headers', () => {
    expect(withTraceHeaders(base, call({ traceparent: TP, tracestate: 'k=v' }))).toEqual({
      ...base,
      traceparent: TP,
      tracestate: 'k=v',
    });
  });

  it('returns the same headers when there is nothing (valid) to mirror', () => {
    expect(withTraceHeaders(base, call(undefined))).toBe(base);
    expect(withTraceHeaders(base, { jsonrpc: '2.0', id: 1, result: {} })).toBe(base);
    expect(withTraceHeaders(base, undefined)).toBe(base);
    // Text from a client never becomes a malformed (or injected) header.
    expect(withTraceHeaders(base, call({ traceparent: `${TP}\r\nx-evil: 1` }))).toBe(base);
    expect(withTraceHeaders(base, call({ traceparent: TP.toUpperCase() }))).toBe(base);
  });

  it('drops a tracestate that is not a header value', () => {
    expect(withTraceHeaders(base, call({ traceparent: TP, tracestate: 'a=1\nb=2' }))).toEqual({
      ...base,
      traceparent: TP,
    });
  });
});
