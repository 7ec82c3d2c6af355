import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { REDACTED } from '../audit/redaction.js';
import type { JsonRpcMessage } from '../protocol/jsonrpc/types.js';
import { createMessageRedactor } from './tape-redaction.js';

const redact = createMessageRedactor();

describe('createMessageRedactor', () => {
  it('cuts secret shapes and secret-named members, and says where', () => {
    const message: JsonRpcMessage = {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name: 'login',
        arguments: {
          user: 'ann',
          password: 'hunter22',
          note: 'use Bearer abcdefghijklmnop1234',
          'a/b': 'sk-abcdefghijklmnopqrstuvwxyz',
        },
        _meta: { progressToken: 'tok-1' },
      },
    };
    const { message: out, cuts } = redact(message);
    expect(cuts).toEqual([
      { path: '/params/arguments/password', rule: 'secret-name' },
      { path: '/params/arguments/note', rule: 'secret-shape' },
      { path: '/params/arguments/a~1b', rule: 'secret-shape' },
    ]);
    expect(out).toEqual({
      ...message,
      params: {
        name: 'login',
        arguments: { user: 'ann', password: REDACTED, note: `use Bearer ${REDACTED}`, 'a/b': REDACTED },
        _meta: { progressToken: 'tok-1' },
      },
    });
  });

  it("keeps the protocol's own members that look secret (progressToken, cursors, maxTokens)", () => {
    const message: JsonRpcMessage = {
      jsonrpc: '2.0',
      id: 2,
      method: 'sampling/createMessage',
      params: { maxTokens: 10, cursor: 'c', _meta: { progressToken: 7 } },
    };
    expect(redact(message)).toEqual({ message, cuts: [] });
  });

  it('keeps deep messages whole (no depth cut) and returns the same object when nothing is cut', () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i < 200; i += 1) deep = { d: deep };
    const message: JsonRpcMessage = { jsonrpc: '2.0', id: 3, result: deep };
    expect(redact(message).message).toBe(message);
  });

  it('changes only what it lists: every other leaf is as it was', () => {
    const secretish = fc.oneof(
      fc.string(),
      fc.constantFrom('password=x1', 'Bearer abcdefghijkl', 'sk-abcdefghijklmnopqrstuvwx', 'plain'),
    );
    const value = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        secretish,
        fc.integer(),
        fc.array(tie('node'), { maxLength: 3 }),
        fc.dictionary(fc.oneof(fc.string(), fc.constantFrom('token', 'apiKey', 'name', 'x/y')), tie('node'), {
          maxKeys: 3,
        }),
      ),
    })).node;
    fc.assert(
      fc.property(value, (v) => {
        const message = { jsonrpc: '2.0', id: 1, result: v } as JsonRpcMessage;
        const { message: out, cuts } = redact(message);
        if (cuts.length === 0) expect(out).toBe(message);
        const changed: string[] = [];
        differences(message, out, '', changed);
        for (const path of changed)
          expect(cuts.some((c) => path === c.path || path.startsWith(`${c.path}/`))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});

/** Pointers of the leaves (and renamed members) where `a` and `b` differ, found independently. */
function differences(a: unknown, b: unknown, path: string, out: string[]): void {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) {
    if (!Object.is(a, b)) out.push(path);
    return;
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  ka.forEach((key, i) => {
    const at = `${path}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
    if (kb[i] !== key) out.push(at);
    differences(
      (a as Record<string, unknown>)[key],
      (b as Record<string, unknown>)[kb[i] as string],
      at,
      out,
    );
  });
}
