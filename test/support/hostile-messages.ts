/**
 * Hostile JSON-RPC payloads for the hostile-input suite, as fast-check arbitraries of a *shape* that
 * is then rendered to text. Rendering by hand (not `JSON.stringify`) is what lets a payload carry
 * what a JavaScript value cannot: integer ids above 2^53, `1e400`, `-0`, lone surrogates, nesting
 * deeper than any recursive serialiser survives. Each rendered payload says which of its messages
 * are requests that must get exactly one answer each (`expected`), so the suite can count.
 */
import fc from 'fast-check';

/** What an id is made of; `fresh` ids are made unique per payload by the renderer's counter. */
export type IdShape =
  | { readonly kind: 'fresh-string'; readonly prefix: string }
  | { readonly kind: 'fresh-int' }
  | { readonly kind: 'fresh-negative' }
  | { readonly kind: 'fresh-float' }
  /** An integer JSON.parse cannot keep exactly (above 2^53), or a number spelled oddly. */
  | { readonly kind: 'raw-number'; readonly text: string }
  /** Not a valid JSON-RPC id at all: object, array, boolean, null. */
  | { readonly kind: 'invalid'; readonly text: string }
  /** The previous message's id again (a duplicate within the batch or, alone, a reuse). */
  | { readonly kind: 'repeat' };

export type ParamsShape =
  | { readonly kind: 'none' }
  | { readonly kind: 'call'; readonly tool: string; readonly args: string }
  | { readonly kind: 'raw'; readonly text: string };

export type MessageShape =
  | {
      readonly kind: 'request';
      readonly id: IdShape;
      readonly method: string;
      readonly params: ParamsShape;
      readonly jsonrpc: string | undefined;
    }
  | { readonly kind: 'notification'; readonly method: string; readonly params: ParamsShape }
  | { readonly kind: 'response'; readonly id: IdShape }
  | { readonly kind: 'raw'; readonly text: string };

export type PayloadShape =
  | { readonly kind: 'single'; readonly message: MessageShape }
  | { readonly kind: 'batch'; readonly messages: readonly MessageShape[] }
  | { readonly kind: 'text'; readonly text: string };

/** A rendered payload and the ids (as JSON text) of the requests that must be answered once each. */
export interface RenderedPayload {
  readonly text: string;
  readonly batch: boolean;
  /**
   * JSON text of each answerable request's id, in order; duplicates appear as often as sent. A
   * numeric id JSON.parse cannot keep exactly (above 2^53, `1.0`, `-0`, `1e400`...) is owed a
   * refusal under `null`.
   */
  readonly expected: readonly string[];
  /** The JSON-RPC methods of the requests, for headers that must name them (2026-07-28). */
  readonly methods: readonly string[];
  /** `params.name` of a single tools/call, for `Mcp-Name`. */
  readonly name?: string;
}

/** Nesting of `depth` arrays or objects around a scalar, as text. */
export function nested(depth: number, kind: 'array' | 'object'): string {
  return kind === 'array'
    ? `${'['.repeat(depth)}1${']'.repeat(depth)}`
    : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

const DEPTHS = [2, 30, 64, 65, 100, 128, 129, 500, 1000, 4500, 20_000];

const awkwardStrings = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('', ' ', '\u0000', '\u2028\u2029', '\ud800', '\udfff', '🙂'.repeat(50), 'a'.repeat(10_000)),
);

/** JSON text of a string, with lone surrogates written as escapes (valid JSON, invalid UTF-16 pair). */
function stringText(value: string): string {
  return JSON.stringify(value);
}

const argsText: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify({ message: 'x', extra: v })),
  },
  { weight: 2, arbitrary: awkwardStrings.map((s) => `{"message":${stringText(s)}}`) },
  {
    weight: 3,
    arbitrary: fc
      .tuple(fc.constantFrom(...DEPTHS), fc.constantFrom<'array' | 'object'>('array', 'object'))
      .map(([depth, kind]) => `{"message":"deep","value":${nested(depth, kind)}}`),
  },
  { weight: 1, arbitrary: fc.constantFrom('[]', '"text"', '5', 'null', '{}') },
);

const toolNames = fc.oneof(
  fc.constantFrom('echo__echo', 'echo', 'odd__echo', 'odd__garbage', 'odd__invalid-response', 'odd__orphan'),
  fc.constantFrom('odd__oversized', 'nope__x', '__', 'echo__', ''),
  awkwardStrings,
);

const params: fc.Arbitrary<ParamsShape> = fc.oneof(
  { weight: 1, arbitrary: fc.constant({ kind: 'none' as const }) },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('call' as const), tool: toolNames, args: argsText }),
  },
  {
    weight: 2,
    arbitrary: fc
      .oneof(
        fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
        fc.constantFrom(...DEPTHS).map((d) => nested(d, 'object')),
      )
      .map((text) => ({ kind: 'raw' as const, text })),
  },
);

const methods = fc.oneof(
  { weight: 6, arbitrary: fc.constant('tools/call') },
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      'tools/list',
      'ping',
      'prompts/list',
      'resources/list',
      'resources/read',
      'resources/subscribe',
      'logging/setLevel',
      'completion/complete',
      'initialize',
      'server/discover',
    ),
  },
  { weight: 1, arbitrary: awkwardStrings },
);

const ids: fc.Arbitrary<IdShape> = fc.oneof(
  {
    weight: 4,
    arbitrary: awkwardStrings.map((prefix) => ({
      kind: 'fresh-string' as const,
      prefix: prefix.slice(0, 2000),
    })),
  },
  { weight: 4, arbitrary: fc.constant({ kind: 'fresh-int' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'fresh-negative' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'fresh-float' as const }) },
  {
    weight: 2,
    arbitrary: fc
      .oneof(
        fc.bigInt({ min: 2n ** 53n + 1n, max: 2n ** 70n }).map(String),
        fc.bigInt({ min: -(2n ** 70n), max: -(2n ** 53n) - 1n }).map(String),
        fc.constantFrom('1e400', '-1e400', '-0', '1.0', '1e2', '0.1e1', '12345678901234567890123456789'),
      )
      .map((text) => ({ kind: 'raw-number' as const, text })),
  },
  {
    weight: 2,
    arbitrary: fc
      .oneof(
        fc.constantFrom('null', 'true', 'false', '{}', '[]', '[1]', '{"id":1}'),
        fc.constant(nested(5000, 'array')),
      )
      .map((text) => ({ kind: 'invalid' as const, text })),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'repeat' as const }) },
);

const message: fc.Arbitrary<MessageShape> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('request' as const),
      id: ids,
      method: methods,
      params,
      jsonrpc: fc.oneof(
        { weight: 9, arbitrary: fc.constant<string | undefined>('2.0') },
        { weight: 1, arbitrary: fc.constantFrom<string | undefined>(undefined, '1.0', '2') },
      ),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('notification' as const),
      method: fc.constantFrom(
        'notifications/cancelled',
        'notifications/progress',
        'notifications/initialized',
        'x',
      ),
      params,
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('response' as const), id: ids }) },
  {
    weight: 1,
    arbitrary: fc
      .oneof(
        fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)),
        fc.constant(nested(4500, 'array')),
      )
      .map((text) => ({ kind: 'raw' as const, text })),
  },
);

export const payloads: fc.Arbitrary<PayloadShape> = fc.oneof(
  { weight: 8, arbitrary: message.map((m) => ({ kind: 'single' as const, message: m })) },
  {
    weight: 3,
    arbitrary: fc
      .array(message, { minLength: 0, maxLength: 6 })
      .map((messages) => ({ kind: 'batch' as const, messages })),
  },
  {
    weight: 2,
    arbitrary: fc
      .oneof(
        fc.string({ unit: 'binary', maxLength: 200 }),
        fc.constantFrom('', ' ', '{', '{"jsonrpc":"2.0","id":', '[', '[{}', 'null', '\u0000', '\ufeff{}'),
        fc.constantFrom(...DEPTHS).map((d) => nested(d, 'array')),
      )
      .map((text) => ({ kind: 'text' as const, text })),
  },
);

/**
 * Whether an id's text comes back as sent: a string, or a number JSON.parse keeps exactly and
 * JSON.stringify writes the same way (`-9007199254741008` does, `9007199254740993`, `1.0` and
 * `1e400` do not).
 */
function echoable(text: string): boolean {
  try {
    return JSON.stringify(JSON.parse(text)) === text;
  } catch {
    return false;
  }
}

/**
 * Renders shapes to text with a counter for fresh ids, so that ids never collide across the
 * payloads of one suite (a reused id is only ever one the shape asked for).
 */
export class PayloadRenderer {
  #next = 1;

  render(shape: PayloadShape): RenderedPayload {
    if (shape.kind === 'text') return { text: shape.text, batch: false, expected: [], methods: [] };
    const messages = shape.kind === 'single' ? [shape.message] : shape.messages;
    const expected: string[] = [];
    const methodsSeen: string[] = [];
    const texts: string[] = [];
    let previous = `${this.#next++}`;
    let previousKind: IdShape['kind'] = 'fresh-int';
    let name: string | undefined;
    for (const m of messages) {
      if (m.kind === 'raw') {
        texts.push(m.text);
        continue;
      }
      if (m.kind === 'notification') {
        texts.push(`{"jsonrpc":"2.0","method":${stringText(m.method)}${this.#params(m.params)}}`);
        continue;
      }
      const id = this.#id(m.id, previous);
      previous = id;
      const kind: IdShape['kind'] = m.id.kind === 'repeat' ? previousKind : m.id.kind;
      previousKind = kind;
      if (m.kind === 'response') {
        texts.push(`{"jsonrpc":"2.0","id":${id},"result":{}}`);
        continue;
      }
      const version = m.jsonrpc === undefined ? '' : `"jsonrpc":${stringText(m.jsonrpc)},`;
      texts.push(`{${version}"id":${id},"method":${stringText(m.method)}${this.#params(m.params)}}`);
      methodsSeen.push(m.method);
      if (m.params.kind === 'call') name = m.params.tool;
      // Every request with a readable id is owed exactly one answer, whatever else is wrong with it;
      // one whose number JSON cannot carry exactly is refused under id null (it could not be echoed).
      if (kind === 'invalid') continue;
      expected.push(echoable(id) ? id : 'null');
    }
    const text = shape.kind === 'single' ? (texts[0] ?? '') : `[${texts.join(',')}]`;
    return {
      text,
      batch: shape.kind === 'batch',
      expected,
      methods: methodsSeen,
      ...(name === undefined ? {} : { name }),
    };
  }

  #id(shape: IdShape, previous: string): string {
    const n = this.#next++;
    switch (shape.kind) {
      case 'fresh-string':
        return stringText(`${shape.prefix}#${n}`);
      case 'fresh-int':
        return String(n);
      case 'fresh-negative':
        return String(-n);
      case 'fresh-float':
        return `${n}.5`;
      case 'raw-number':
        return shape.text;
      case 'invalid':
        return shape.text;
      case 'repeat':
        return previous;
    }
  }

  #params(shape: ParamsShape): string {
    if (shape.kind === 'none') return '';
    if (shape.kind === 'raw') return `,"params":${shape.text}`;
    return `,"params":{"name":${stringText(shape.tool)},"arguments":${shape.args}}`;
  }
}

/**
 * An id's JSON text as it reads after a round trip through JSON.parse, the form in which both the
 * sent and the answered ids are counted. Ids JSON cannot carry exactly are owed under `null`, so
 * one echoed changed (an integer above 2^53, rounded) shows up as an answer to an id nobody sent.
 */
export function idKey(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text) ?? null) ?? 'null';
  } catch {
    return 'unreadable';
  }
}

/** The `idKey` of each JSON-RPC response (result or error) among `messages`. */
export function answeredIds(messages: readonly Record<string, unknown>[]): string[] {
  const ids: string[] = [];
  for (const m of messages) {
    if (!('result' in m) && !('error' in m)) continue;
    ids.push(JSON.stringify(m.id ?? null));
  }
  return ids;
}
