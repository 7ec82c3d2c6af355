/**
 * JSON-RPC batches as a hostile client writes them (issue 18, item 5), for the unit and the
 * end-to-end tests of "every request of a batch gets exactly one answer of its own": requests
 * whose ids repeat (in the batch, and across batches), notifications, invalid elements with and
 * without a readable id, ids that cannot be echoed exactly, elements nested past the depth limit.
 * Each element comes as text, since some of them (`9007199254740993`, `1.0`) cannot be made by
 * `JSON.stringify`.
 */
import fc from 'fast-check';
import { expect } from 'vitest';

/** One element of a batch, and what its answer must be. */
export interface BatchElement {
  readonly text: string;
  /**
   * The id its answer carries: a request's own id (valid or not), `null` for an element answered
   * without one, `undefined` for a notification (no answer).
   */
  readonly answeredAs: string | number | null | undefined;
}

/** Ids drawn from a small pool, so that batches repeat them. */
const id = fc.constantFrom<string | number>(1, 2, 3, '1', 'a');

/**
 * `request(id)` is a valid request under that id, answered by the gateway itself (`ping`) or by
 * the upstream (`tools/call` of the echo fixture's `echo`).
 */
export function batchElement(options: { readonly deepLevels: number }): fc.Arbitrary<BatchElement> {
  const deep = `${'['.repeat(options.deepLevels)}${']'.repeat(options.deepLevels)}`;
  return fc.oneof(
    id.map((i) => ({ text: JSON.stringify({ jsonrpc: '2.0', id: i, method: 'ping' }), answeredAs: i })),
    fc.tuple(id, fc.string({ maxLength: 8 })).map(([i, message]) => ({
      text: JSON.stringify({
        jsonrpc: '2.0',
        id: i,
        method: 'tools/call',
        params: { name: 'echo', arguments: { message } },
      }),
      answeredAs: i,
    })),
    fc.constant({
      text: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/unknown-to-everyone' }),
      answeredAs: undefined,
    }),
    // Invalid, with a readable id: answered under it.
    id.map((i) => ({ text: JSON.stringify({ jsonrpc: '1.0', id: i, method: 'ping' }), answeredAs: i })),
    id.map((i) => ({ text: JSON.stringify({ jsonrpc: '2.0', id: i, method: 7 }), answeredAs: i })),
    // Too deep, with a readable id: answered under it.
    id.map((i) => ({
      text: `{"jsonrpc":"2.0","id":${JSON.stringify(i)},"method":"tools/call","params":{"name":"echo","arguments":${deep}}}`,
      answeredAs: i,
    })),
    // Invalid without a readable id, or with one that cannot be echoed: answered with id null.
    fc.constantFrom(
      { text: '42', answeredAs: null },
      { text: '{"jsonrpc":"2.0","id":null,"method":"ping"}', answeredAs: null },
      { text: '{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}', answeredAs: null },
      { text: '{"jsonrpc":"2.0","id":1.0,"method":"ping"}', answeredAs: null },
    ),
  );
}

/** A batch of 1 to 8 elements, as the text of a JSON array. */
export function hostileBatch(options: { readonly deepLevels: number }): fc.Arbitrary<BatchElement[]> {
  return fc.array(batchElement(options), { minLength: 1, maxLength: 8 });
}

export function batchText(elements: readonly BatchElement[]): string {
  return `[${elements.map((e) => e.text).join(',')}]`;
}

/** The key an answer id is counted under: `1` and `"1"` differ. */
function keyOf(value: unknown): string {
  return value === null ? 'null' : `${typeof value}:${String(value)}`;
}

/**
 * Exactly one answer per request of the batch: as many answers under each id as the batch had
 * requests under it, as many with `id: null` as it had elements answered without an id, nothing
 * else (`answers` undefined: nothing was written back, right only for a batch with no request).
 */
export function expectOneAnswerPerRequest(
  elements: readonly BatchElement[],
  answers: readonly { readonly id?: unknown }[] | undefined,
): void {
  const expected = new Map<string, number>();
  for (const element of elements) {
    if (element.answeredAs === undefined) continue;
    const key = keyOf(element.answeredAs);
    expected.set(key, (expected.get(key) ?? 0) + 1);
  }
  const got = new Map<string, number>();
  for (const answer of answers ?? []) {
    const key = keyOf(answer.id);
    got.set(key, (got.get(key) ?? 0) + 1);
  }
  const sorted = (m: Map<string, number>) => [...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  expect(sorted(got), batchText(elements)).toEqual(sorted(expected));
}
