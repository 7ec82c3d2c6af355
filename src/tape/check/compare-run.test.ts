import { describe, expect, it } from 'vitest';
import type { JsonRpcMessage, JsonRpcRequest, JsonRpcResponse } from '../../protocol/jsonrpc/types.js';
import { renderReport, reportJson, shortValue } from './check-report.js';
import type { CheckLine, CheckTape } from './check-tape-view.js';
import { compareRun, type LiveRun } from './compare-run.js';
import { parseIgnoreRule } from './json-pointer-pattern.js';
import { volatilePredicate } from './volatile-values.js';

const rules = { volatile: volatilePredicate() };

function line(seq: number, dir: 'c2s' | 's2c', message: object, re?: number): CheckLine {
  return {
    seq,
    t: seq,
    dir,
    message: { jsonrpc: '2.0', ...message } as JsonRpcMessage,
    ...(re === undefined ? {} : { re }),
  };
}

/**
 * A call with progress, a call that asks the client to sample (answered last), a secret the
 * recorder cut, an answer an export could not hold whole, and a cancelled call.
 */
const tape: CheckTape = {
  header: {
    server: { initialize: {} },
    redactions: [{ seq: 9, path: '/message/result/token' }],
    incomplete: [{ seq: 11 }],
  },
  messages: [
    line(1, 'c2s', { id: 1, method: 'tools/call', params: { name: 'slow', _meta: { progressToken: 't1' } } }),
    line(2, 's2c', { method: 'notifications/progress', params: { progressToken: 't1', progress: 1 } }, 1),
    line(3, 's2c', { method: 'notifications/progress', params: { progressToken: 't1', progress: 2 } }, 1),
    line(
      4,
      's2c',
      { id: 1, result: { content: [{ type: 'text', text: 'done' }], createdAt: '2026-11-28T10:00:00Z' } },
      1,
    ),
    line(5, 'c2s', { id: 2, method: 'tools/call', params: { name: 'ask' } }),
    line(
      6,
      's2c',
      { id: 0, method: 'sampling/createMessage', params: { messages: ['hi'], _meta: { traceparent: 'x' } } },
      5,
    ),
    line(7, 'c2s', { id: 0, result: { text: 'reply' } }, 6),
    line(8, 'c2s', { id: 3, method: 'secrets/get' }),
    line(9, 's2c', { id: 3, result: { token: '[REDACTED]', kept: 1 } }, 8),
    line(10, 'c2s', { id: 4, method: 'resources/read', params: { uri: 'file:///big' } }),
    line(11, 's2c', { id: 4, result: { _omitted: 'output' } }, 10),
    line(12, 'c2s', { id: 5, method: 'tools/call', params: { name: 'cancelled' } }),
    line(13, 's2c', { id: 2, result: { content: [] } }, 5),
  ],
};

function answer(id: number, result: unknown): JsonRpcResponse {
  return { jsonrpc: '2.0', id, result };
}

function run(over: Partial<LiveRun> = {}): LiveRun {
  return {
    answers: new Map([
      [1, answer(1, { createdAt: '2026-11-29T08:00:00.123Z', content: [{ type: 'text', text: 'done' }] })],
      [5, answer(2, { content: [] })],
      [8, answer(3, { token: 'sk-live-secret', kept: 1 })],
      [10, answer(4, { contents: [] })],
    ]),
    progress: new Map([[1, { count: 2, afterAnswer: 0 }]]),
    serverRequests: [
      {
        recorded: 6,
        live: {
          jsonrpc: '2.0',
          id: 'x',
          method: 'sampling/createMessage',
          params: { messages: ['hi'] },
        } as JsonRpcRequest,
      },
    ],
    missing: [],
    startedAt: 0,
    log: [],
    ...over,
  };
}

describe('compareRun', () => {
  it('applies a METHOD:POINTER ignore only to the comparisons of that method', () => {
    // The tools/call answer and the secrets/get answer both change their text.
    const changed = run({
      answers: new Map([
        [1, answer(1, { createdAt: '2026-11-28T10:00:00Z', content: [{ type: 'text', text: 'changed' }] })],
        [5, answer(2, { content: [] })],
        [8, answer(3, { token: 'x', kept: 2 })],
        [10, answer(4, { contents: [] })],
      ]),
      serverRequests: [
        {
          recorded: 6,
          live: {
            jsonrpc: '2.0',
            id: 'x',
            method: 'sampling/createMessage',
            params: { messages: ['other'] },
          },
        },
      ],
    });
    const differing = (ignore: string[]) =>
      compareRun(tape, changed, { ...rules, ignore: ignore.map(parseIgnoreRule) })
        .items.filter((i) => i.status !== 'same')
        .map((i) => i.seq);
    expect(differing([])).toEqual([1, 6, 8]);
    expect(differing(['tools/call:/result/content/*/text'])).toEqual([6, 8]);
    expect(differing(['secrets/get:/result/content/*/text'])).toEqual([1, 6, 8]);
    expect(differing(['secrets/get:/result/kept', 'sampling/createMessage:/params/messages'])).toEqual([1]);
    // Unscoped, a pointer applies to every comparison; an empty pointer after the method, to the whole answer.
    expect(differing(['/result/kept', 'tools/call:'])).toEqual([6]);
  });

  it('tells a scoped ignore from a JSON Pointer', () => {
    expect(parseIgnoreRule('/result/a:/b')).toEqual({ pattern: ['result', 'a:', 'b'] });
    expect(parseIgnoreRule('tools/call:/result/content/*/text')).toEqual({
      method: 'tools/call',
      pattern: ['result', 'content', null, 'text'],
    });
    expect(parseIgnoreRule('x:y:/result')).toEqual({ method: 'x:y', pattern: ['result'] });
    expect(parseIgnoreRule('ping:')).toEqual({ method: 'ping', pattern: [] });
    expect(() => parseIgnoreRule('result/x')).toThrow('nor METHOD:POINTER');
    expect(() => parseIgnoreRule('tools/call:result')).toThrow('nor METHOD:POINTER');
  });

  it('finds nothing when the live run says what the tape says (timestamps, cut secrets, trace context, incomplete answers aside)', () => {
    const report = compareRun(tape, run(), rules);
    expect(report.items.map((i) => [i.kind, i.seq, i.status])).toEqual([
      ['answer', 1, 'same'],
      ['progress', 1, 'same'],
      ['answer', 5, 'same'],
      ['server-request', 6, 'same'],
      ['answer', 8, 'same'],
    ]);
    expect(report.differing).toBe(0);
    expect(report.skipped).toBe(1);
    expect(renderReport(report)).toBe(
      '1 calls not compared: the tape does not hold their answers whole (incomplete)\nok: 5 compared (3 answers, 1 server requests, 1 progress sequences), none differs\n',
    );
  });

  it('compares progress by count and order only', () => {
    const fewer = compareRun(tape, run({ progress: new Map([[1, { count: 1, afterAnswer: 0 }]]) }), rules);
    expect(fewer.items.find((i) => i.kind === 'progress')).toMatchObject({
      status: 'differs',
      note: '2 recorded, 1 live',
    });
    const late = compareRun(tape, run({ progress: new Map([[1, { count: 2, afterAnswer: 1 }]]) }), rules);
    expect(late.items.find((i) => i.kind === 'progress')).toMatchObject({
      status: 'differs',
      note: '2 recorded, 2 live, 1 after the answer',
    });
  });

  it('reports missing answers and server requests, and server requests the tape cannot answer', () => {
    const report = compareRun(
      tape,
      run({
        answers: new Map(),
        progress: new Map(),
        serverRequests: [{ live: { jsonrpc: '2.0', id: 9, method: 'elicitation/create' } as JsonRpcRequest }],
        missing: [1],
        closed: 'exited with code 1',
      }),
      rules,
    );
    expect(report.items.map((i) => [i.kind, i.method, i.status])).toEqual([
      ['answer', 'tools/call', 'missing'],
      ['answer', 'tools/call', 'missing'],
      ['server-request', 'sampling/createMessage', 'missing'],
      ['answer', 'secrets/get', 'missing'],
      ['server-request', 'elicitation/create', 'unexpected'],
    ]);
    expect(report.items[0]?.note).toBe('the server went away (exited with code 1)');
    const text = renderReport(report);
    expect(text).toContain(
      'MISSING  answer to tools/call slow (seq 1): the server went away (exited with code 1)\n',
    );
    expect(text).toContain(
      'UNEXPECTED  server request elicitation/create: the tape holds no such request (answered -32601)\n',
    );
    expect(text).toContain('the server went away before the end: exited with code 1\nFAILED: 5 of 5 differ');
    expect(JSON.parse(reportJson(report))).toMatchObject({
      ok: false,
      compared: 5,
      differing: 5,
      closed: 'exited with code 1',
    });
  });

  it('prints each difference with its path and both values, long values cut', () => {
    const long = 'x'.repeat(500);
    const report = compareRun(
      tape,
      run({ answers: new Map([...run().answers, [5, answer(2, { content: [long], isError: true })]]) }),
      rules,
    );
    expect(renderReport(report)).toContain(
      [
        'DIFFERS  answer to tools/call ask (seq 5)',
        '    /result/content/0',
        '      recorded: (absent)',
        `      live:     ${shortValue(long)}`,
        '    /result/isError',
        '      recorded: (absent)',
        '      live:     true',
      ].join('\n'),
    );
    expect(shortValue(long)).toMatch(/^"x{159}… \(502 characters\)$/);
  });

  it('compares an error with an error, and a result turned error at both paths', () => {
    const failing = run({
      answers: new Map([
        ...run().answers,
        [5, { jsonrpc: '2.0', id: 2, error: { code: -32603, message: 'boom' } }],
      ]),
    });
    const item = compareRun(tape, failing, rules).items.find((i) => i.seq === 5);
    expect(item?.differences.map((d) => [d.path, d.kind])).toEqual([
      ['/error', 'added'],
      ['/result', 'removed'],
    ]);
  });
});
