import { describe, expect, it } from 'vitest';
import type { JsonRpcMessage } from '../../protocol/jsonrpc/types.js';
import { readTape } from '../tape-reader.js';
import { createMessageRedactor } from '../tape-redaction.js';
import { writeTape } from '../tape-writer.js';
import type { LiveRun } from './compare-run.js';
import { updatedTape } from './updated-tape.js';

const SECRET = 'Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123';

function m(value: object): JsonRpcMessage {
  return { jsonrpc: '2.0', ...value } as JsonRpcMessage;
}

const run: LiveRun = {
  answers: new Map(),
  progress: new Map(),
  serverRequests: [],
  missing: [],
  startedAt: Date.parse('2026-11-28T12:00:00.000Z'),
  log: [
    {
      t: 0,
      dir: 'c2s',
      message: m({
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } },
      }),
    },
    {
      t: 5,
      dir: 's2c',
      message: m({
        id: 1,
        result: {
          protocolVersion: '2025-06-18',
          capabilities: { tools: {} },
          serverInfo: { name: 's', version: '2' },
        },
      }),
    },
    { t: 6, dir: 'c2s', message: m({ method: 'notifications/initialized' }) },
    { t: 7, dir: 'c2s', message: m({ id: 2, method: 'tools/call', params: { name: 'ask' } }) },
    { t: 8, dir: 's2c', message: m({ id: 40, method: 'sampling/createMessage', params: {} }) },
    { t: 9, dir: 'c2s', message: m({ id: 40, result: { text: 'ok' } }) },
    { t: 10, dir: 's2c', message: m({ id: 2, result: { content: [{ type: 'text', text: SECRET }] } }) },
  ],
};

describe('updatedTape', () => {
  it('is a tape of the live run: the live handshake in the header, calls tied together, secrets cut and listed', () => {
    const tape = readTape(
      writeTape(
        updatedTape(
          run,
          { via: 'record', command: ['node', 's.js'], gateway: 'test' },
          createMessageRedactor(),
        ),
      ),
    );
    expect(tape.header).toMatchObject({
      recordedAt: '2026-11-28T12:00:00.000Z',
      protocolVersion: '2025-06-18',
      server: { initialize: { serverInfo: { name: 's', version: '2' } } },
      client: { initialize: { clientInfo: { name: 'c', version: '1' } } },
      source: { via: 'record', command: ['node', 's.js'] },
    });
    expect(tape.messages.map((l) => [l.seq, l.dir, l.re, l.t])).toEqual([
      [1, 'c2s', undefined, 0],
      [2, 's2c', 1, 5],
      [3, 'c2s', undefined, 6],
      [4, 'c2s', undefined, 7],
      [5, 's2c', 4, 8], // the server's request, made during the one open call
      [6, 'c2s', 5, 9],
      [7, 's2c', 4, 10],
    ]);
    expect(tape.header.redactions).toEqual([
      { seq: 7, path: '/message/result/content/0/text', rule: 'secret-shape' },
    ]);
    expect(JSON.stringify(tape)).not.toContain('abcdefghijklmnopqrstuvwxyz0123');
  });

  it('keeps secrets without a redactor (--keep-secrets)', () => {
    const tape = updatedTape(run, { via: 'record', gateway: 'test' }, undefined);
    expect(tape.header.redactions).toEqual([]);
    expect(JSON.stringify(tape.messages)).toContain(SECRET);
  });
});
