import { describe, expect, it } from 'vitest';
import type { HopEvent } from '../core/taps.js';
import type { JsonRpcMessage } from '../protocol/jsonrpc/types.js';
import { MemoryLineSink } from './tape-line-sink.js';
import { readTape } from './tape-reader.js';
import { TapeRecorderTap } from './tape-recorder.js';
import { createMessageRedactor } from './tape-redaction.js';

let n = 0;
/** The fields of a hop the recorder reads; the router builds the rest. */
function hop(
  from: string,
  to: string,
  message: JsonRpcMessage,
  context: string,
  at: number,
  sentAt?: number,
): HopEvent {
  n += 1;
  return {
    id: `E${n}`,
    from,
    to,
    message,
    context,
    receivedAt: at,
    ...(sentAt === undefined ? {} : { sentAt }),
  } as HopEvent;
}

const source = { via: 'record' as const, gateway: 'switchboard test' };

describe('TapeRecorderTap', () => {
  it('keeps the hops facing its upstream, timed as the server saw them, tied to their calls', () => {
    const sink = new MemoryLineSink();
    const tap = new TapeRecorderTap('x', {
      sink,
      facts: { source, protocolVersion: '2025-06-18' },
      redactor: createMessageRedactor(),
    });
    const C = 'S/c1';
    const events = [
      hop(
        'client-S',
        'gateway',
        { jsonrpc: '2.0', id: 'a', method: 'tools/call', params: { name: 't' } },
        C,
        1000,
      ),
      hop(
        'gateway',
        'server-x',
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 't' } },
        C,
        1000,
        1001,
      ),
      hop('gateway', 'server-y', { jsonrpc: '2.0', id: 9, method: 'ping' }, 'S/c9', 1001, 1001),
      hop(
        'server-x',
        'gateway',
        { jsonrpc: '2.0', id: 5, method: 'elicitation/create', params: {} },
        `${C}/e`,
        1010,
      ),
      hop(
        'gateway',
        'client-S',
        { jsonrpc: '2.0', id: 77, method: 'elicitation/create', params: {} },
        `${C}/e`,
        1010,
        1010,
      ),
      hop(
        'gateway',
        'server-x',
        { jsonrpc: '2.0', id: 5, result: { action: 'accept', content: { apiKey: 'k-123' } } },
        `${C}/e`,
        1020,
        1021,
      ),
      hop('server-x', 'gateway', { jsonrpc: '2.0', method: 'notifications/tools/list_changed' }, 'S', 1030),
      hop('server-x', 'gateway', { jsonrpc: '2.0', id: 1, result: { content: [] } }, C, 1040),
      hop('gateway', 'client-S', { jsonrpc: '2.0', id: 'a', result: { content: [] } }, C, 1040, 1041),
    ];
    for (const e of events) tap.observe(e);
    expect(tap.size).toBe(5);
    expect(tap.finish()).toEqual({ messages: 5, redactions: 1 });
    const tape = readTape(sink.text());
    expect(tape.messages.map((m) => [m.seq, m.t, m.dir, m.re, m.envelope])).toEqual([
      [1, 0, 'c2s', undefined, 'E2'],
      [2, 9, 's2c', 1, 'E4'],
      [3, 20, 'c2s', 2, 'E6'],
      [4, 29, 's2c', undefined, 'E7'],
      [5, 39, 's2c', 1, 'E8'],
    ]);
    expect(tape.header).toMatchObject({
      protocolVersion: '2025-06-18',
      server: { initialize: {} },
      redactions: [{ seq: 3, path: '/message/result/content/apiKey', rule: 'secret-name' }],
      recordedAt: new Date(1001).toISOString(),
    });
    expect(tape.header.client).toBeUndefined();
  });

  it('keeps secrets with no redactor', () => {
    const sink = new MemoryLineSink();
    const tap = new TapeRecorderTap('x', { sink, facts: { source } });
    tap.observe(
      hop(
        'gateway',
        'server-x',
        { jsonrpc: '2.0', id: 1, method: 'm', params: { password: 'p' } },
        'S/1',
        0,
        0,
      ),
    );
    tap.finish();
    const tape = readTape(sink.text());
    expect(tape.header.redactions).toEqual([]);
    expect(JSON.stringify(tape.messages[0]?.message)).toContain('"password":"p"');
  });

  it('writes as it goes: the header once the initialize is answered, then each line, each cut on its line', () => {
    const sink = new MemoryLineSink();
    const tap = new TapeRecorderTap('x', { sink, facts: { source }, redactor: createMessageRedactor() });
    const init = {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18' },
    } as const;
    tap.observe(hop('gateway', 'server-x', init, 'S/i', 0, 0));
    // The header waits for the handshake's answer; nothing is written before it.
    expect(sink.text()).toBe('');
    const answer = {
      jsonrpc: '2.0',
      id: 0,
      result: { protocolVersion: '2025-06-18', serverInfo: { name: 's' } },
    };
    tap.observe(hop('server-x', 'gateway', answer as JsonRpcMessage, 'S/i', 5));
    expect(sink.text().split('\n')).toHaveLength(4);
    const secret = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { token: 'sk-123' } } as const;
    tap.observe(hop('gateway', 'server-x', secret, 'S/c', 6, 6));
    // Killed here: the lines so far read as a cut tape, with the handshake in its header.
    const cut = readTape(sink.text(), 'cut', { allowTruncated: true });
    expect(cut.truncated).toBe(true);
    expect(cut.messages).toHaveLength(3);
    expect(cut.header.server.initialize).toEqual(answer.result);
    expect(cut.header.redactions).toEqual([{ seq: 3, path: '/message/params/token', rule: 'secret-name' }]);
    expect(() => readTape(sink.text(), 'cut')).toThrow('cut:4: truncated (no end line after line 4');
    expect(sink.text().split('\n')[3]).toContain('"redactions":[{"path":"/message/params/token"');
    tap.finish();
    expect(readTape(sink.text())).toEqual({ ...cut, truncated: undefined, header: cut.header });
  });

  it('writes the header at once for a session that opens without a handshake, and at the end if nothing came', () => {
    const sink = new MemoryLineSink();
    const tap = new TapeRecorderTap('x', { sink, facts: { source, protocolVersion: '2026-07-28' } });
    tap.observe(hop('gateway', 'server-x', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, 'S/1', 0, 0));
    expect(readTape(sink.text(), 'p', { allowTruncated: true }).header.protocolVersion).toBe('2026-07-28');
    const empty = new MemoryLineSink();
    new TapeRecorderTap('x', { sink: empty, facts: { source } }).finish();
    expect(readTape(empty.text()).messages).toEqual([]);
  });
});
