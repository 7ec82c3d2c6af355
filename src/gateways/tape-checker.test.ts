/**
 * The runner against a real child process: the tape's overlap is kept (two calls sent before
 * either answers stay concurrent, or this peer never answers), server requests are answered from
 * the tape or refused, and the server going away ends every wait.
 */
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../observe/logger.js';
import { Metrics } from '../observe/metrics.js';
import type { JsonRpcMessage } from '../protocol/jsonrpc/types.js';
import type { CheckLine, CheckTape } from '../tape/check/check-tape-view.js';
import { compareRun } from '../tape/check/compare-run.js';
import { ChildProcessTransport } from '../transports/stdio/child-process-transport.js';
import { runTapeCheck } from './tape-checker.js';

/**
 * A stdio MCP peer: `slow` answers only once `fast` has arrived (a checker that waited for
 * `slow`'s answer before sending `fast` would wait forever); `ask` asks the client
 * `sampling/createMessage` and `roots/list`, then answers with what it was told.
 */
const PEER = `
const out = (m) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\\n');
let buffer = '', slow, asked = new Map(), next = 100;
process.stdin.on('data', (chunk) => {
  buffer += chunk;
  for (let nl = buffer.indexOf('\\n'); nl >= 0; nl = buffer.indexOf('\\n')) {
    const m = JSON.parse(buffer.slice(0, nl)); buffer = buffer.slice(nl + 1);
    if (m.method === 'initialize') out({ id: m.id, result: { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 'peer', version: '1' } } });
    else if (m.method === 'tools/call' && m.params.name === 'slow') slow = m.id;
    else if (m.method === 'tools/call' && m.params.name === 'fast') { out({ id: m.id, result: { text: 'fast' } }); if (slow !== undefined) out({ id: slow, result: { text: 'slow' } }); }
    else if (m.method === 'tools/call' && m.params.name === 'ask') {
      const call = m.id, answers = [];
      for (const method of ['sampling/createMessage', 'roots/list']) { const id = next++; asked.set(id, (a) => { answers.push(a); if (answers.length === 2) out({ id: call, result: { answers } }); }); out({ id, method, params: {} }); }
    } else if (m.id !== undefined && m.method === undefined) asked.get(m.id)?.(m.result ?? { error: m.error.code });
    else if (m.method === 'tools/call' && m.params.name === 'exit') process.exit(7);
  }
});`;

function tapeOf(lines: [dir: 'c2s' | 's2c', message: object, re?: number][]): CheckTape {
  const messages: CheckLine[] = lines.map(([dir, message, re], i) => ({
    seq: i + 1,
    t: i,
    dir,
    message: { jsonrpc: '2.0', ...message } as JsonRpcMessage,
    ...(re === undefined ? {} : { re }),
  }));
  return { header: { server: { initialize: {} } }, messages };
}

const HANDSHAKE: [dir: 'c2s' | 's2c', message: object, re?: number][] = [
  [
    'c2s',
    {
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    },
  ],
  [
    's2c',
    {
      id: 1,
      result: { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 'peer', version: '1' } },
    },
    1,
  ],
  ['c2s', { method: 'notifications/initialized' }],
];

function peer(): ChildProcessTransport {
  return new ChildProcessTransport({
    name: 'peer',
    command: process.execPath,
    args: ['-e', PEER],
    env: { PATH: process.env.PATH ?? '' },
    maxMessageBytes: 1 << 20,
    logger: silentLogger,
    metrics: new Metrics(),
    shutdownGraceMs: 200,
  });
}

describe('runTapeCheck', () => {
  it('keeps the overlap the tape shows: a call sent before the other was answered', async () => {
    const tape = tapeOf([
      ...HANDSHAKE,
      ['c2s', { id: 2, method: 'tools/call', params: { name: 'slow' } }],
      ['c2s', { id: 3, method: 'tools/call', params: { name: 'fast' } }],
      ['s2c', { id: 3, result: { text: 'fast' } }, 5],
      ['s2c', { id: 2, result: { text: 'slow' } }, 4],
    ]);
    const run = await runTapeCheck(tape, peer(), { timeoutMs: 3000 });
    expect(run.missing).toEqual([]);
    expect(compareRun(tape, run, {}).differing).toBe(0);
  });

  it("answers the server's requests from the tape, and refuses (and reports) what the tape cannot answer", async () => {
    const tape = tapeOf([
      ...HANDSHAKE,
      ['c2s', { id: 2, method: 'tools/call', params: { name: 'ask' } }],
      ['s2c', { id: 0, method: 'sampling/createMessage', params: {} }, 4],
      ['c2s', { id: 0, result: { text: 'from the tape' } }, 5],
      ['s2c', { id: 2, result: { answers: [{ text: 'from the tape' }] } }, 4],
    ]);
    const run = await runTapeCheck(tape, peer(), { timeoutMs: 3000 });
    const report = compareRun(tape, run, {});
    expect(report.items.map((i) => [i.kind, i.method, i.status])).toEqual([
      ['answer', 'initialize', 'same'],
      ['answer', 'tools/call', 'differs'],
      ['server-request', 'sampling/createMessage', 'same'],
      ['server-request', 'roots/list', 'unexpected'],
    ]);
    expect(report.items[1]?.differences).toEqual([
      { path: '/result/answers/1', kind: 'added', live: { error: -32601 } },
    ]);
    // The live conversation, in order, as --update writes it: the tape's answer under the live id.
    expect(run.log.filter((l) => l.dir === 'c2s').map((l) => l.message)).toContainEqual({
      jsonrpc: '2.0',
      id: 100,
      result: { text: 'from the tape' },
    });
  });

  it('ends every wait when the server exits, and says why', async () => {
    const tape = tapeOf([
      ...HANDSHAKE,
      ['c2s', { id: 2, method: 'tools/call', params: { name: 'exit' } }],
      ['s2c', { id: 2, result: {} }, 4],
      ['c2s', { id: 3, method: 'tools/call', params: { name: 'fast' } }],
      ['s2c', { id: 3, result: { text: 'fast' } }, 6],
    ]);
    // A wait the exit did not end would outlast the test's own timeout.
    const run = await runTapeCheck(tape, peer(), { timeoutMs: 60_000 });
    expect(run.closed).toMatch(/7/);
    expect(run.missing).toEqual([4]);
    const report = compareRun(tape, run, {});
    expect(report.items.filter((i) => i.status === 'missing').map((i) => i.seq)).toEqual([4, 6]);
  });
});
