import { describe, expect, it } from 'vitest';
import type { HopEvent } from '../core/taps.js';
import type { JsonRpcMessage } from '../protocol/jsonrpc/types.js';
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
    const tap = new TapeRecorderTap('x');
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
    const tape = tap.tape({ source, protocolVersion: '2025-06-18' }, createMessageRedactor());
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
    const tap = new TapeRecorderTap('x');
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
    const tape = tap.tape({ source }, undefined);
    expect(tape.header.redactions).toEqual([]);
    expect(JSON.stringify(tape.messages[0]?.message)).toContain('"password":"p"');
  });
});
