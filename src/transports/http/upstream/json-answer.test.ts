import { describe, expect, it } from 'vitest';
import { readJsonAnswer } from './json-answer.js';

const LEGACY = { allowBatch: true, maxDepth: 64 };
const MODERN = { allowBatch: false, maxDepth: 64 };
const note = (n: number) => `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":${n}}}`;
const done = (id: unknown) => `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{}}`;

/** The texts of what was read, related first, the response last. */
function texts(body: string, id: number | string, rules = LEGACY): string[] {
  const answer = readJsonAnswer(body, id, rules);
  if (!answer.ok) throw new Error(answer.fault);
  return [...answer.related.map((m) => m.text), answer.response.text];
}

describe('readJsonAnswer', () => {
  it('reads one message as the body wrote it', () => {
    expect(texts(` ${done(1)}\n`, 1)).toEqual([` ${done(1)}\n`]);
  });

  it('splits messages at the end of each value, whatever is between them, keeping their exact text', () => {
    expect(texts(`${note(1)}\n${done(1)}`, 1)).toEqual([note(1), done(1)]);
    expect(texts(`${note(1)}\r\n\r\n${done(1)}\r\n`, 1)).toEqual([note(1), done(1)]);
    expect(texts(`${note(1)}${note(2)}${done(1)}`, 1)).toEqual([note(1), note(2), done(1)]);
    // Brackets, quotes and line breaks inside strings do not end a value.
    const tricky = '{"jsonrpc":"2.0","method":"m","params":{"s":"}\\n{\\"]","t":"\\\\"}}';
    expect(texts(`${tricky}\n${done(1)}`, 1)).toEqual([tricky, done(1)]);
    // An id the parser would change (1.0) keeps its text: the router judges it as from any upstream.
    expect(texts(`${note(1)}\n{"jsonrpc":"2.0","id":1.0,"result":{}}`, 1)[1]).toBe(
      '{"jsonrpc":"2.0","id":1.0,"result":{}}',
    );
  });

  it('puts the response last, and flattens batches where they are allowed', () => {
    expect(texts(`${done(1)}\n${note(1)}`, 1)).toEqual([note(1), done(1)]);
    expect(texts(`${note(1)}\n[ ${note(2)} , ${done('a')} ]`, 'a')).toEqual([note(1), note(2), done('a')]);
    expect(readJsonAnswer(`[${done(1)}]`, 1, MODERN)).toMatchObject({
      ok: false,
      fault: 'a JSON-RPC batch, which MCP 2026-07-28 does not allow',
    });
    expect(readJsonAnswer(`${note(1)}\n[]`, 1, LEGACY)).toMatchObject({
      ok: false,
      fault: 'an empty JSON-RPC batch (value 2 of 2, line 2, column 1)',
    });
  });

  it('gives a refusal without id the request id', () => {
    const answer = readJsonAnswer(
      '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}',
      5,
      LEGACY,
    );
    expect(answer).toMatchObject({ ok: true, response: { message: { id: 5 } } });
    expect(answer.ok && JSON.parse(answer.response.text)).toMatchObject({ id: 5 });
  });

  it('names where the text stops being JSON, and delivers nothing of it', () => {
    expect(readJsonAnswer(`${note(1)}\n${done(1)}}`, 1, LEGACY)).toEqual({
      ok: false,
      related: [],
      fault: `a body that is not JSON in the value at line 2, column ${done(1).length + 1} (offset ${note(1).length + 1 + done(1).length}): Unexpected token '}', "}" is not valid JSON`,
    });
    expect(readJsonAnswer('\n\n  nope', 1, LEGACY)).toMatchObject({
      fault: expect.stringMatching(
        /^a body that is not JSON in the value at line 3, column 3 \(offset 4\): /,
      ),
    });
  });

  it('marks a related message nested past the limit, and refuses such a response', () => {
    const deep = `{"jsonrpc":"2.0","method":"m","params":{"a":${'['.repeat(70)}${']'.repeat(70)}}}`;
    const answer = readJsonAnswer(`${deep}\n${done(1)}`, 1, LEGACY);
    expect(answer.ok && answer.related[0]?.deep).toBe(
      'it nests 72 levels of objects and arrays; the gateway accepts at most 64 (maxJsonDepth)',
    );
    const response = `{"jsonrpc":"2.0","id":1,"result":${'['.repeat(70)}${']'.repeat(70)}}`;
    expect(readJsonAnswer(response, 1, LEGACY)).toMatchObject({
      ok: false,
      fault:
        'a response too deep: it nests 71 levels of objects and arrays; the gateway accepts at most 64 (maxJsonDepth)',
    });
  });
});
