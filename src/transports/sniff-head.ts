/**
 * Reads what it can of a JSON-RPC message from only its first bytes, for messages too large to
 * parse whole: the top-level keys seen and the top-level `id`. With that the gateway can still
 * answer the right request with an error. A tiny tokenizer that tracks nesting and strings; it
 * never throws and reports only what it is sure of.
 */
import type { RequestId } from '../protocol/jsonrpc/types.js';

export interface HeadSniff {
  readonly id?: RequestId;
  /** Top-level keys seen in the head (`method`, `result`, `error`, ...). */
  readonly keys: ReadonlySet<string>;
}

export function sniffHead(head: string): HeadSniff {
  const keys = new Set<string>();
  let id: RequestId | undefined;
  try {
    let depth = 0;
    let expectKey = false;
    let i = 0;
    while (i < head.length) {
      const ch = head[i]!;
      if (ch === '"') {
        const end = stringEnd(head, i);
        if (end < 0) break;
        if (depth === 1 && expectKey) {
          const key = JSON.parse(head.slice(i, end + 1)) as string;
          let j = skipSpace(head, end + 1);
          if (head[j] !== ':') break;
          j = skipSpace(head, j + 1);
          keys.add(key);
          expectKey = false;
          if (key === 'id') {
            const value = readScalar(head, j);
            if (value !== undefined) id = value;
          }
          i = j;
          continue;
        }
        i = end + 1;
        continue;
      }
      if (ch === '{' || ch === '[') {
        depth++;
        expectKey = ch === '{' && depth === 1;
      } else if (ch === '}' || ch === ']') depth--;
      else if (ch === ',' && depth === 1) expectKey = true;
      i++;
    }
  } catch {
    // Unreadable: report what was collected so far.
  }
  return id === undefined ? { keys } : { id, keys };
}

function stringEnd(text: string, start: number): number {
  for (let i = start + 1; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === '"') return i;
  }
  return -1;
}

function skipSpace(text: string, from: number): number {
  let i = from;
  while (i < text.length && ' \t\r\n'.includes(text[i]!)) i++;
  return i;
}

function readScalar(text: string, at: number): RequestId | undefined {
  if (text[at] === '"') {
    const end = stringEnd(text, at);
    return end < 0 ? undefined : (JSON.parse(text.slice(at, end + 1)) as string);
  }
  const match = /^-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(at, at + 40));
  if (!match) return undefined;
  // The number must be complete: followed by a delimiter, not cut off by the end of the head (a
  // head ending in `12.` or `5e` would otherwise be read as 12 or 5).
  const next = text[at + match[0].length];
  if (next === undefined || !',}] \t\r\n'.includes(next)) return undefined;
  const value = Number(match[0]);
  return Number.isFinite(value) ? value : undefined;
}
