import { describe, expect, it } from 'vitest';
import { SwitchboardError } from '../errors/switchboard-error.js';
import { TAPE_VERSION, type Tape } from './tape-format.js';
import { readTape } from './tape-reader.js';
import { TapeBuilder, writeTape } from './tape-writer.js';

const header = {
  tape: 1,
  kind: 'header',
  recordedAt: '2026-11-28T10:00:00.000Z',
  source: { via: 'record', command: ['node', 'server.js'], gateway: 'switchboard 0.0.0' },
  protocolVersion: '2025-06-18',
  server: {
    initialize: { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 's', version: '1' } },
  },
  redactions: [],
  incomplete: [],
};
const request = {
  kind: 'message',
  seq: 1,
  t: 0,
  dir: 'c2s',
  message: { jsonrpc: '2.0', id: 1, method: 'ping' },
};
const response = {
  kind: 'message',
  seq: 2,
  t: 1.5,
  dir: 's2c',
  re: 1,
  message: { jsonrpc: '2.0', id: 1, result: {} },
};
const end = (n: number) => ({ kind: 'end', messages: n });
const lines = (...values: unknown[]) => `${values.map((v) => JSON.stringify(v)).join('\n')}\n`;

function failure(text: string | Uint8Array): { message: string; line: unknown } {
  try {
    readTape(text, 't.jsonl');
  } catch (err) {
    expect(err).toBeInstanceOf(SwitchboardError);
    const e = err as SwitchboardError;
    expect(e.code).toBe('SB_TAPE_INVALID');
    return { message: e.message, line: e.details?.line };
  }
  throw new Error('the tape was read');
}

describe('readTape', () => {
  it('reads a whole tape', () => {
    const tape = readTape(lines(header, request, response, end(2)));
    expect(tape.header.protocolVersion).toBe('2025-06-18');
    expect(tape.messages.map((m) => [m.seq, m.dir, m.re])).toEqual([
      [1, 'c2s', undefined],
      [2, 's2c', 1],
    ]);
  });

  it('ignores unknown fields and accepts CRLF and a missing final newline', () => {
    const text = lines({ ...header, future: 1 }, { ...request, extra: true }, end(1)).replaceAll(
      '\n',
      '\r\n',
    );
    expect(readTape(text.slice(0, -2)).messages).toHaveLength(1);
  });

  it.each([
    ['', 1, 'empty'],
    [lines({ ...header, tape: 3 }, end(0)), 1, 'tape version 3 is not supported (this build reads 1 and 2)'],
    [
      lines({ ...header, tape: 2, redactions: [{ seq: 1, path: '/message/params', rule: 'secret-name' }] }),
      1,
      '"redactions" belong on the message lines in tape version 2',
    ],
    [
      lines({ ...header, tape: 2, redactions: undefined }, { ...request, redactions: [{ path: 1 }] }, end(1)),
      2,
      '"redactions[0]" must be {"path", "rule"}',
    ],
    [lines({ ...header, tape: undefined }, end(0)), 1, 'no "tape" version'],
    [lines(request, end(1)), 1, 'the first line is a message'],
    [
      lines({ protocol: 'meup/v0.2', id: 'x', kind: 'mcp/request', payload: {} }),
      1,
      'switchboard tape export <session> writes a tape',
    ],
    [lines({ ...header, server: {} }, end(0)), 1, 'header without "server.initialize"'],
    [lines({ ...header, protocolVersion: undefined }, end(0)), 1, 'header without "protocolVersion"'],
    [lines(header, { ...request, seq: undefined }, end(1)), 2, 'message line without seq'],
    [lines(header, { ...request, seq: 2 }, end(1)), 2, 'seq 2 out of order (expected 1)'],
    [lines(header, { ...request, dir: 'up' }, end(1)), 2, '"dir" must be "c2s" or "s2c"'],
    [lines(header, { ...request, t: -1 }, end(1)), 2, '"t" must be a number'],
    [lines(header, { ...request, message: { id: 1 } }, end(1)), 2, 'not a JSON-RPC message'],
    [lines(header, { ...request, re: 1 }, end(1)), 2, '"re" must name an earlier line'],
    [lines(header, request, end(2)), 3, 'the end line counts 2 messages, the tape holds 1'],
    [lines(header, end(0), request), 2, 'an end line before the last line'],
    [lines(header, header, end(0)), 2, 'a second header'],
    [
      lines(header, request),
      2,
      'truncated (no end line after line 2: the tape was cut short; tape replay and tape check read its complete lines with --allow-truncated)',
    ],
    [
      `${lines(header, request)}{"kind":"mess`,
      3,
      'truncated (the last line has no end; tape replay and tape check read its complete lines with --allow-truncated)',
    ],
    [JSON.stringify(header).slice(0, 40), 1, 'truncated (the header line has no end'],
    [`${lines(header)}{oops}\n${lines(end(0))}`, 2, 'not JSON ('],
    [`${lines(header)}\n${lines(end(0))}`, 2, 'blank line'],
  ])('refuses a bad tape, naming the line (%#)', (text, line, what) => {
    const got = failure(text);
    expect(got.line).toBe(line);
    expect(got.message).toContain(`t.jsonl:${line}: `);
    expect(got.message).toContain(what);
  });

  it('reads version 1, whose header lists the cuts, and version 2, whose lines do, into the same tape', () => {
    const cut = { seq: 1, path: '/message/params/token', rule: 'secret-name' };
    const v1 = readTape(lines({ ...header, redactions: [cut] }, request, end(1)));
    const v2 = readTape(
      lines(
        { ...header, tape: 2, redactions: undefined },
        { ...request, redactions: [{ path: cut.path, rule: cut.rule }] },
        end(1),
      ),
    );
    expect(v1.header.redactions).toEqual([cut]);
    expect(v2).toEqual(v1);
    expect(writeTape(v1)).toContain('"redactions":[{"path":"/message/params/token","rule":"secret-name"}]');
    expect(writeTape(v1).split('\n')[0]).not.toContain('redactions');
  });

  it('with allowTruncated, reads the complete lines of a cut tape and marks it truncated', () => {
    const cut = `${lines(header, request)}{"kind":"message","seq":2,"t":1,"di`;
    const tape = readTape(cut, 't.jsonl', { allowTruncated: true });
    expect(tape.truncated).toBe(true);
    expect(tape.messages.map((m) => m.seq)).toEqual([1]);
    // A cut inside a character of the unfinished line is let go with the line.
    const bytes = new TextEncoder().encode(`${lines(header, request)}{"kind":"message","t":"é`);
    expect(
      readTape(bytes.subarray(0, bytes.length - 1), 't', { allowTruncated: true }).messages,
    ).toHaveLength(1);
    // A whole tape is not truncated; other faults are still refused.
    expect(readTape(lines(header, request, end(1)), 't', { allowTruncated: true }).truncated).toBeUndefined();
    expect(() => readTape(lines(header, { ...request, seq: 3 }), 't', { allowTruncated: true })).toThrow(
      't:2: seq 3 out of order',
    );
    expect(() => readTape('{"tape":2,"kind":"hea', 't', { allowTruncated: true })).toThrow(
      't:1: truncated (the header line has no end',
    );
  });

  it('names the line of bytes that are not UTF-8', () => {
    const head = new TextEncoder().encode(lines(header, request));
    const bytes = new Uint8Array([...head, 0xff, 0xfe, 0x0a]);
    expect(failure(bytes)).toMatchObject({ line: 3, message: 't.jsonl:3: not UTF-8 text' });
  });
});

describe('TapeBuilder', () => {
  it('numbers, times and relates messages: responses, progress, cancellation, reused ids', () => {
    const b = new TapeBuilder();
    b.add({
      dir: 'c2s',
      at: 100,
      message: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { _meta: { progressToken: 'p' } } },
    });
    b.add({
      dir: 's2c',
      at: 101,
      message: {
        jsonrpc: '2.0',
        method: 'notifications/progress',
        params: { progressToken: 'p', progress: 1 },
      },
    });
    b.add({
      dir: 's2c',
      at: 102,
      message: { jsonrpc: '2.0', id: 1, method: 'sampling/createMessage' },
      re: 1,
    });
    b.add({ dir: 'c2s', at: 103, message: { jsonrpc: '2.0', id: 1, result: {} } });
    b.add({ dir: 's2c', at: 104.25, message: { jsonrpc: '2.0', id: 1, result: {} } });
    b.add({ dir: 'c2s', at: 105, message: { jsonrpc: '2.0', id: 1, method: 'ping' } });
    b.add({
      dir: 'c2s',
      at: 106,
      message: { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } },
    });
    expect(b.messages.map((m) => [m.seq, m.t, m.re])).toEqual([
      [1, 0, undefined],
      [2, 1, 1],
      [3, 2, 1],
      [4, 3, 3],
      [5, 4.25, 1],
      [6, 5, undefined],
      [7, 6, 6],
    ]);
    const tape: Tape = b.tape({ ...header, tape: TAPE_VERSION } as Tape['header']);
    expect(readTape(writeTape(tape))).toEqual(tape);
  });
});

describe('callsOf', () => {
  it('gives each request its response and what was said during it', async () => {
    const { callsOf } = await import('./tape-calls.js');
    const b = new TapeBuilder();
    b.add({
      dir: 'c2s',
      at: 0,
      message: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { _meta: { progressToken: 7 } } },
    });
    b.add({
      dir: 's2c',
      at: 1,
      message: {
        jsonrpc: '2.0',
        method: 'notifications/progress',
        params: { progressToken: 7, progress: 1 },
      },
    });
    b.add({ dir: 'c2s', at: 2, message: { jsonrpc: '2.0', method: 'notifications/initialized' } });
    b.add({ dir: 's2c', at: 3, message: { jsonrpc: '2.0', id: 1, result: { content: [] } } });
    const calls = callsOf(b.tape(header as Tape['header']));
    expect(calls.map((c) => [c.request.seq, c.response?.seq, c.during.map((d) => d.seq)])).toEqual([
      [1, 4, [2]],
    ]);
  });
});
