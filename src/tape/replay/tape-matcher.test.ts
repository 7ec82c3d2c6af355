import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { requestKey } from './request-key.js';
import { type RecordedRequest, TapeMatcher } from './tape-matcher.js';

const METHODS = ['tools/call', 'resources/read', 'prompts/get', 'completion/complete'];
const LISTS = new Set(['tools/list', 'prompts/list']);
const reusable = (method: string): boolean => LISTS.has(method);

/** A small argument space, so that identical requests occur often. */
const argumentsArb = fc.dictionary(
  fc.constantFrom('a', 'b', 'message', 'x y'),
  fc.oneof(fc.integer({ min: 0, max: 2 }), fc.constantFrom('hi', 'yo')),
  {
    maxKeys: 2,
  },
);

const requestArb = fc.record({
  method: fc.constantFrom(...METHODS),
  params: fc.record({ name: fc.constantFrom('echo', 'add'), arguments: argumentsArb }),
});

/** Recorded requests, seq 1, 3, 5… (the lines between are their answers). */
const tapeArb = fc
  .array(requestArb, { minLength: 1, maxLength: 12 })
  .map((rs) => rs.map((r, i): RecordedRequest => ({ seq: 2 * i + 1, method: r.method, params: r.params })));

/** What a live client adds or changes without changing the request's meaning. */
function disguise(params: unknown, token: number): Record<string, unknown> {
  const p = params as Record<string, unknown>;
  const reversed = Object.fromEntries(Object.entries(p).reverse());
  return {
    ...reversed,
    _meta: {
      progressToken: `live-${token}`,
      traceparent: `00-${String(token).padStart(32, '0')}-${'1'.repeat(16)}-01`,
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'switchboard.dev/trace': 'x',
    },
  };
}

describe('requestKey', () => {
  it('ignores key order, progress tokens, trace context and transport _meta; not the arguments', () => {
    fc.assert(
      fc.property(requestArb, fc.nat(), (r, token) => {
        expect(requestKey(r.method, disguise(r.params, token))).toBe(requestKey(r.method, r.params));
        const changed = { ...r.params, arguments: { ...r.params.arguments, extra: token } };
        expect(requestKey(r.method, changed)).not.toBe(requestKey(r.method, r.params));
      }),
    );
  });

  it('keeps the client’s own _meta members', () => {
    expect(requestKey('tools/call', { name: 'a', _meta: { 'com.example/tenant': 1 } })).not.toBe(
      requestKey('tools/call', { name: 'a' }),
    );
    expect(requestKey('tools/call', { _meta: { progressToken: 1 } })).toBe(
      requestKey('tools/call', undefined),
    );
  });
});

describe('TapeMatcher, mode match', () => {
  it('answers any order of the recorded requests, each once, identical ones in recorded order', () => {
    fc.assert(
      fc.property(
        tapeArb.chain((tape) =>
          fc.tuple(fc.constant(tape), fc.shuffledSubarray(tape, { minLength: tape.length })),
        ),
        ([tape, live]) => {
          const matcher = new TapeMatcher(tape, 'match');
          const given = live.map((r, i) => matcher.match(r.method, disguise(r.params, i)));
          for (const outcome of given) expect(outcome.kind).toBe('hit');
          const seqs = given.map((o) => (o.kind === 'hit' ? o.seq : -1));
          expect([...seqs].sort((a, b) => a - b)).toEqual(tape.map((r) => r.seq));
          // Identical requests: the answers go out in recorded order.
          const byKey = new Map<string, number[]>();
          live.forEach((r, i) => {
            const key = requestKey(r.method, r.params);
            byKey.set(key, [...(byKey.get(key) ?? []), seqs[i] as number]);
          });
          for (const answered of byKey.values())
            expect(answered).toEqual([...answered].sort((a, b) => a - b));
          expect(matcher.remaining).toBe(0);
        },
      ),
    );
  });

  it('refuses one request more than recorded as used-up, naming the last identical one', () => {
    fc.assert(
      fc.property(tapeArb, fc.nat(), (tape, pick) => {
        const matcher = new TapeMatcher(tape, 'match');
        for (const r of tape) matcher.match(r.method, r.params);
        const again = tape[pick % tape.length] as RecordedRequest;
        const outcome = matcher.match(again.method, again.params);
        expect(outcome.kind).toBe('miss');
        if (outcome.kind !== 'miss') return;
        expect(outcome.reason).toBe('used-up');
        const last = tape
          .filter((r) => requestKey(r.method, r.params) === requestKey(again.method, again.params))
          .at(-1);
        expect(outcome.closest?.seq).toBe(last?.seq);
        expect(outcome.closest?.differences).toEqual([]);
      }),
    );
  });

  it('names the closest recorded request and the JSON path that differs', () => {
    const matcher = new TapeMatcher(
      [
        { seq: 1, method: 'tools/call', params: { name: 'echo', arguments: { message: 'hello' } } },
        { seq: 3, method: 'tools/call', params: { name: 'add', arguments: { a: 1, b: 2 } } },
      ],
      'match',
    );
    const outcome = matcher.match('tools/call', { name: 'echo', arguments: { message: 'hullo' } });
    expect(outcome).toEqual({
      kind: 'miss',
      reason: 'not-recorded',
      closest: {
        seq: 1,
        method: 'tools/call',
        differences: [{ path: '$.arguments.message', recorded: 'hello', got: 'hullo' }],
      },
    });
  });

  it('a miss changes nothing: the recorded requests still match afterwards', () => {
    fc.assert(
      fc.property(tapeArb, (tape) => {
        const matcher = new TapeMatcher(tape, 'match');
        expect(matcher.match('tools/call', { name: 'never', arguments: { z: 9 } }).kind).toBe('miss');
        for (const r of tape) expect(matcher.match(r.method, r.params).kind).toBe('hit');
      }),
    );
  });
});

describe('TapeMatcher, mode strict', () => {
  it('answers the recorded order exactly', () => {
    fc.assert(
      fc.property(tapeArb, (tape) => {
        const matcher = new TapeMatcher(tape, 'strict');
        const seqs = tape.map((r, i) => {
          const o = matcher.match(r.method, disguise(r.params, i));
          return o.kind === 'hit' ? o.seq : -1;
        });
        expect(seqs).toEqual(tape.map((r) => r.seq));
      }),
    );
  });

  it('refuses a request ahead of its turn, names the expected one, and keeps its place', () => {
    fc.assert(
      fc.property(
        tapeArb.filter((t) =>
          t.some((r) => requestKey(r.method, r.params) !== requestKey(t[0]?.method ?? '', t[0]?.params)),
        ),
        (tape) => {
          const first = tape[0] as RecordedRequest;
          const ahead = tape.find(
            (r) => requestKey(r.method, r.params) !== requestKey(first.method, first.params),
          ) as RecordedRequest;
          const matcher = new TapeMatcher(tape, 'strict');
          const outcome = matcher.match(ahead.method, ahead.params);
          expect(outcome).toMatchObject({
            kind: 'miss',
            reason: 'out-of-order',
            closest: { seq: first.seq },
          });
          expect(matcher.match(first.method, first.params)).toMatchObject({ kind: 'hit', seq: first.seq });
        },
      ),
    );
  });
});

describe('TapeMatcher, mode loose', () => {
  it('never misses a recorded method: repeats re-use the last answer, new params the closest', () => {
    fc.assert(
      fc.property(tapeArb, fc.array(fc.tuple(fc.nat(), argumentsArb), { maxLength: 20 }), (tape, extra) => {
        const matcher = new TapeMatcher(tape, 'loose');
        for (const r of tape) expect(matcher.match(r.method, r.params).kind).toBe('hit');
        for (const [pick, args] of extra) {
          const base = tape[pick % tape.length] as RecordedRequest;
          const params = { ...(base.params as object), arguments: args };
          const outcome = matcher.match(base.method, params);
          expect(outcome.kind).toBe('hit');
          if (outcome.kind !== 'hit') continue;
          const answered = tape.find((r) => r.seq === outcome.seq) as RecordedRequest;
          expect(answered.method).toBe(base.method);
          const exact = requestKey(answered.method, answered.params) === requestKey(base.method, params);
          expect(outcome.approximate === undefined || outcome.approximate.length > 0).toBe(true);
          if (!exact) expect(outcome.approximate?.length).toBeGreaterThan(0);
        }
        expect(matcher.match('never/recorded', {}).kind).toBe('miss');
      }),
    );
  });

  it('repeats an exact request with the last identical answer', () => {
    const p = { name: 'echo', arguments: { message: 'a' } };
    const matcher = new TapeMatcher(
      [
        { seq: 1, method: 'tools/call', params: p },
        { seq: 5, method: 'tools/call', params: p },
      ],
      'loose',
    );
    expect([1, 2, 3].map(() => matcher.match('tools/call', p))).toEqual([
      { kind: 'hit', seq: 1, reused: false },
      { kind: 'hit', seq: 5, reused: false },
      { kind: 'hit', seq: 5, reused: true },
    ]);
  });
});

describe('TapeMatcher, reusable methods', () => {
  it('answers lists any number of times in every mode, outside the strict order', () => {
    for (const mode of ['strict', 'match', 'loose'] as const) {
      const matcher = new TapeMatcher(
        [
          { seq: 1, method: 'tools/list', params: {} },
          { seq: 3, method: 'tools/call', params: { name: 'echo' } },
        ],
        mode,
        reusable,
      );
      expect(matcher.match('tools/list', undefined)).toMatchObject({ kind: 'hit', seq: 1 });
      expect(matcher.match('tools/call', { name: 'echo' })).toMatchObject({ kind: 'hit', seq: 3 });
      expect(matcher.match('tools/list', { _meta: { progressToken: 2 } })).toMatchObject({
        kind: 'hit',
        seq: 1,
        reused: true,
      });
      expect(matcher.match('tools/list', { cursor: 'next' }).kind).toBe(mode === 'loose' ? 'hit' : 'miss');
    }
  });
});

describe('noMatchError', () => {
  it('names the closest request and the path in its message and data', async () => {
    const { noMatchError } = await import('./no-match-error.js');
    const matcher = new TapeMatcher(
      [{ seq: 7, method: 'tools/call', params: { name: 'echo', arguments: { message: 'hello' } } }],
      'match',
    );
    const miss = matcher.match('tools/call', { name: 'echo', arguments: { message: 'bye' } });
    if (miss.kind !== 'miss') throw new Error('expected a miss');
    const error = noMatchError('tools/call', 'match', miss);
    expect(error.code).toBe(-32011);
    expect(error.message).toBe(
      'tape replay: no recorded answer for tools/call: the tape holds no such request; closest recorded request: #7 tools/call, differs at $.arguments.message: recorded "hello", got "bye"',
    );
    expect(error.data).toMatchObject({
      code: 'SB_TAPE_NO_MATCH',
      reason: 'not-recorded',
      closest: { seq: 7 },
    });
  });
});

describe('TapeMatcher, recorded secrets', () => {
  it('a recorded [REDACTED] matches whatever the live client sends there', () => {
    const matcher = new TapeMatcher(
      [
        {
          seq: 1,
          method: 'tools/call',
          params: { name: 'login', arguments: { token: '[REDACTED]', user: 'ann' } },
        },
      ],
      'strict',
    );
    expect(
      matcher.match('tools/call', { name: 'login', arguments: { token: 'sk-live-123', user: 'bob' } }),
    ).toMatchObject({
      kind: 'miss',
      closest: { differences: [{ path: '$.arguments.user', recorded: 'ann', got: 'bob' }] },
    });
    expect(
      matcher.match('tools/call', { name: 'login', arguments: { token: 'sk-live-123', user: 'ann' } }),
    ).toMatchObject({
      kind: 'hit',
      seq: 1,
    });
  });
});
