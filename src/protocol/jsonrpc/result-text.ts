/**
 * The text of a response's `result` inside the response's own JSON text, without serialising the
 * result again: the audit ledger hashes "the result as returned", and for a large tool output
 * `JSON.stringify(result)` costs milliseconds on the gateway's thread (about 3.8 ms for 1 MB on a
 * 2-core VM) while the response was serialised moments before to be sent.
 *
 * Exact, not heuristic: for an object whose own keys are `jsonrpc`, `id` and `result`, in that
 * order and nothing else, `JSON.stringify` writes `{"jsonrpc":<j>,"id":<i>,"result":<r>}` where `<r>`
 * is `JSON.stringify(result)` (the serialisation is compositional, with no whitespace and no
 * replacer). Anything else (other members, another order, no result, other text) gives `undefined`,
 * and the caller serialises the result itself.
 */

/** `JSON.stringify(response.result)`, read from `text` = `JSON.stringify(response)`; see above. */
export function resultTextOf(text: string, response: object): string | undefined {
  const at = resultTextOffset(text, response);
  return at === undefined ? undefined : text.slice(at, -1);
}

/**
 * Where {@link resultTextOf}'s slice starts in `text` (it ends before the last character), so that
 * the text and the offset can travel together without the slice; undefined when there is no exact
 * slice.
 */
export function resultTextOffset(text: string, response: object): number | undefined {
  const keys = Object.keys(response);
  if (keys.length !== 3 || keys[0] !== 'jsonrpc' || keys[1] !== 'id' || keys[2] !== 'result')
    return undefined;
  const { jsonrpc, id } = response as { jsonrpc: unknown; id: unknown };
  if (typeof jsonrpc !== 'string' || (typeof id !== 'string' && typeof id !== 'number')) return undefined;
  const prefix = `{"jsonrpc":${JSON.stringify(jsonrpc)},"id":${JSON.stringify(id)},"result":`;
  if (text.length <= prefix.length + 1 || !text.startsWith(prefix) || !text.endsWith('}')) return undefined;
  return prefix.length;
}
