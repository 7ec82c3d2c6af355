import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonRpcCode } from './codes.js';
import {
  classifyPayload,
  DEFAULT_MAX_JSON_DEPTH,
  parseJson,
  parseMessage,
  parsePayload,
  readJson,
} from './parse.js';

const single = { allowBatch: false, revision: '2025-06-18' } as const;
const batches = { allowBatch: true, revision: '2025-03-26' } as const;

function errorOf(text: string, options: { allowBatch: boolean; revision?: string } = single) {
  const outcome = parsePayload(text, options);
  if (outcome.kind === 'invalid') return { ...outcome.error, id: null };
  if (outcome.kind === 'single' && !outcome.outcome.ok)
    return { ...outcome.outcome.error, id: outcome.outcome.id };
  return undefined;
}

describe('parsePayload and parseMessage', () => {
  it('accepts the four kinds of message', () => {
    for (const message of [
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 'a', result: {} },
      { jsonrpc: '2.0', id: 2, error: { code: -32601, message: 'no' } },
    ]) {
      expect(parsePayload(JSON.stringify(message), single)).toEqual({
        kind: 'single',
        outcome: { ok: true, message },
      });
    }
  });

  it('answers text that is not JSON with -32700 naming the parser’s reason', () => {
    const error = errorOf('{"jsonrpc": "2.0",');
    expect(error?.code).toBe(JsonRpcCode.ParseError);
    expect(error?.message).toMatch(/^Parse error: /);
  });

  it.each([
    ['1', 'a message must be a JSON object, got a number'],
    ['{"id":1,"method":"x"}', 'missing "jsonrpc": "2.0"'],
    ['{"jsonrpc":"1.0","id":1,"method":"x"}', '"jsonrpc" must be "2.0", got "1.0"'],
    ['{"jsonrpc":"2.0","id":null,"method":"x"}', '"id" must be a string or a number, got null'],
    ['{"jsonrpc":"2.0","id":{},"result":1}', '"id" must be a string or a number, got an object'],
    ['{"jsonrpc":"2.0","id":1,"method":7}', '"method" must be a string, got a number'],
    ['{"jsonrpc":"2.0","id":1,"method":""}', '"method" must not be empty'],
    ['{"jsonrpc":"2.0","id":1,"method":"x","result":1}', 'must not carry "result" or "error"'],
    ['{"jsonrpc":"2.0","id":1,"method":"x","params":3}', '"params" must be an object or an array'],
    [
      '{"jsonrpc":"2.0","id":1,"method":"x","params":null}',
      '"params" must be an object or an array, got null',
    ],
    ['{"jsonrpc":"2.0","id":1,"result":1,"error":{}}', 'exactly one of "result" and "error"'],
    ['{"jsonrpc":"2.0","id":1}', 'needs "method"'],
    ['{"jsonrpc":"2.0","result":1}', 'must carry the "id" of the request'],
    ['{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}', '"error.code" must be an integer'],
    ['{"jsonrpc":"2.0","id":1,"error":{"code":1}}', '"error.message" must be a string'],
  ])('answers %s with -32600 saying what is wrong', (text, says) => {
    const error = errorOf(text);
    expect(error?.code).toBe(JsonRpcCode.InvalidRequest);
    expect(error?.message).toContain(says);
  });

  it('echoes the id when it is readable, and never a null or invalid one', () => {
    expect(errorOf('{"jsonrpc":"2.0","id":"k","method":""}')?.id).toBe('k');
    expect(errorOf('{"jsonrpc":"1.0","id":5,"method":"x"}')?.id).toBe(5);
    expect(errorOf('{"jsonrpc":"2.0","id":[1],"method":"x"}')?.id).toBeNull();
  });

  it('refuses a batch where the revision allows none, naming the revision; takes one where it does', () => {
    const text = JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'ping' }]);
    const refused = errorOf(text);
    expect(refused?.code).toBe(JsonRpcCode.InvalidRequest);
    expect(refused?.message).toContain('2025-06-18');
    expect(parsePayload(text, batches)).toMatchObject({ kind: 'batch', items: [{ ok: true }] });
    expect(errorOf('[]', batches)?.message).toContain('empty batch');
    const mixed = JSON.stringify([
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      { jsonrpc: '2.0', id: 2, result: {} },
    ]);
    expect(errorOf(mixed, batches)?.message).toContain('not both');
  });

  it('never throws, whatever the text or value; an error is -32700 or -32600 and echoes a valid id or none', () => {
    const anyValue = fc.anything({ withNullPrototype: true, withBigInt: true, withMap: true, withSet: true });
    const messageLike = fc.record(
      {
        jsonrpc: fc.oneof(fc.constant('2.0'), fc.anything()),
        id: fc.oneof(fc.string(), fc.integer(), fc.double(), fc.constant(null), fc.anything()),
        method: fc.oneof(fc.string(), fc.anything()),
        params: fc.anything(),
        result: fc.anything(),
        error: fc.oneof(fc.record({ code: fc.anything(), message: fc.anything() }), fc.anything()),
      },
      { requiredKeys: [] },
    );
    const check = (outcome: ReturnType<typeof parseMessage>) => {
      if (outcome.ok) return;
      expect([JsonRpcCode.ParseError, JsonRpcCode.InvalidRequest]).toContain(outcome.error.code);
      expect(outcome.id === null || typeof outcome.id === 'string' || Number.isFinite(outcome.id)).toBe(true);
    };
    fc.assert(
      fc.property(fc.oneof(anyValue, messageLike), fc.boolean(), (value, allowBatch) => {
        check(parseMessage(value));
        const classified = classifyPayload(value, { allowBatch });
        if (classified.kind === 'single') check(classified.outcome);
        if (classified.kind === 'batch') for (const item of classified.items) check(item);
        let text: string | undefined;
        try {
          text = JSON.stringify(value);
        } catch {
          text = undefined;
        }
        if (typeof text === 'string') parsePayload(text, { allowBatch });
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.string(), (text) => {
        expect(() => parsePayload(text, single)).not.toThrow();
      }),
    );
  });

  it('does not throw on a value whose members throw when read', () => {
    const hostile = Object.defineProperty({ jsonrpc: '2.0' }, 'method', {
      enumerable: true,
      get() {
        throw new Error('boom');
      },
    });
    expect(parseMessage(hostile)).toMatchObject({ ok: false, error: { code: JsonRpcCode.InvalidRequest } });
  });
});

/** A request whose `arguments` nest so that the whole message is `depth` levels deep. */
function callNesting(depth: number, id = '7'): string {
  const inner = depth - 2; // the message and params are two levels; arguments nest the rest
  return `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"t","arguments":${'['.repeat(inner)}${']'.repeat(inner)}}}`;
}

describe('the depth limit', () => {
  it('takes a message at the limit and refuses one level more, naming the limit, with its id', () => {
    const at = parsePayload(callNesting(DEFAULT_MAX_JSON_DEPTH), single);
    expect(at).toMatchObject({ kind: 'single', outcome: { ok: true } });
    const over = parsePayload(callNesting(DEFAULT_MAX_JSON_DEPTH + 1), single);
    expect(over).toEqual({
      kind: 'single',
      outcome: {
        ok: false,
        id: 7,
        error: {
          code: JsonRpcCode.InvalidRequest,
          message: `Invalid Request: the message nests ${DEFAULT_MAX_JSON_DEPTH + 1} levels of objects and arrays; the gateway accepts at most ${DEFAULT_MAX_JSON_DEPTH} (maxJsonDepth)`,
        },
      },
    });
  });

  it('refuses the 4,500-level body of the issue without overflowing anything, and follows maxDepth', () => {
    const outcome = parsePayload(callNesting(4500, '"deep"'), single);
    expect(outcome).toMatchObject({ kind: 'single', outcome: { ok: false, id: 'deep' } });
    expect(parsePayload(callNesting(20), { ...single, maxDepth: 20 })).toMatchObject({
      outcome: { ok: true },
    });
    expect(parsePayload(callNesting(21), { ...single, maxDepth: 20 })).toMatchObject({
      outcome: { ok: false, error: { message: expect.stringContaining('at most 20') } },
    });
  });

  it('judges each element of a batch on its own, its own id echoed', () => {
    const text = `[${callNesting(200, '1')},{"jsonrpc":"2.0","id":2,"method":"ping"},${callNesting(300, '"three"')}]`;
    const outcome = parsePayload(text, batches);
    expect(outcome.kind).toBe('batch');
    if (outcome.kind !== 'batch') return;
    expect(outcome.items.map((i) => (i.ok ? 'ok' : i.id))).toEqual([1, 'ok', 'three']);
  });

  it('parseJson refuses a deeper value with the id it can read, and -32700 for text that is not JSON', () => {
    expect(parseJson(callNesting(300))).toMatchObject({ ok: false, id: 7, error: { code: -32600 } });
    expect(parseJson(callNesting(300, '1.0'))).toMatchObject({ ok: false, id: null });
    expect(parseJson('[[', {})).toMatchObject({ ok: false, id: null, error: { code: -32700 } });
    expect(parseJson(callNesting(30))).toMatchObject({ ok: true, value: { id: 7 } });
    expect(readJson(callNesting(3000))).toMatchObject({ ok: true, shape: { depth: 3000 } });
  });
});

describe('ids that JSON.parse cannot keep exactly', () => {
  it.each([
    ['9007199254740993', 9007199254740992],
    ['-9007199254740993', -9007199254740992],
    ['1.0', 1],
    ['-0', 0],
    ['1e3', 1000],
    ['12345678901234567890', 12345678901234567000],
  ])('refuses id %s (it would come back as %s) with id null, naming it', (token, changed) => {
    for (const text of [
      `{"jsonrpc":"2.0","id":${token},"method":"ping"}`,
      `{"jsonrpc":"2.0","id":${token},"result":{}}`,
    ]) {
      const outcome = parsePayload(text, single);
      expect(outcome).toMatchObject({
        kind: 'single',
        outcome: { ok: false, id: null, idText: token, error: { code: JsonRpcCode.InvalidRequest } },
      });
      if (outcome.kind === 'single' && !outcome.outcome.ok) {
        expect(outcome.outcome.error.message).toContain(`id ${token} cannot be echoed exactly`);
        expect(outcome.outcome.error.message).toContain(`come back as ${JSON.stringify(changed)}`);
      }
    }
  });

  it('keeps every id it accepts exactly: its echo is the text the client wrote', () => {
    const id = fc.oneof(
      fc.integer({ min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }).map(String),
      fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }).map(String),
      fc.double({ noNaN: true, noDefaultInfinity: true }).map(String),
      fc.string().map((s) => JSON.stringify(s)),
      fc.constantFrom('1.0', '-0', '1e3', '1E2', '0.50', '1e400', '-1e400', '2.50e1'),
    );
    fc.assert(
      fc.property(id, fc.boolean(), (token, batch) => {
        const message = `{"jsonrpc":"2.0","id":${token},"method":"ping"}`;
        const outcome = parsePayload(batch ? `[${message}]` : message, batch ? batches : single);
        const item =
          outcome.kind === 'single'
            ? outcome.outcome
            : outcome.kind === 'batch'
              ? outcome.items[0]
              : undefined;
        expect(item).toBeDefined();
        if (item?.ok) {
          // Accepted: answering it writes back exactly what the client sent.
          expect(JSON.stringify((item.message as { id: unknown }).id)).toBe(token);
        } else {
          expect(item?.error.code).toBe(JsonRpcCode.InvalidRequest);
          expect(item?.id).toBeNull();
        }
      }),
      { numRuns: 1000 },
    );
  });
});
