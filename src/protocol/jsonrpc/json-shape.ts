/**
 * What `JSON.parse` forgets and the gateway needs: how deep each message nests, and the exact
 * text of a numeric `id`. One linear scan of text that `JSON.parse` has already accepted, so it
 * validates nothing and never throws.
 *
 * Why depth: `JSON.parse` takes any nesting, but `JSON.stringify`, `structuredClone` and every
 * recursive walker of ours overflow the stack somewhere past 2,000 levels (a 10 KB body), so the
 * gateway refuses messages deeper than its limit where text becomes a value, before anything
 * walks them. Why the id's text: JSON numbers become 64-bit floats, so `9007199254740993`,
 * `1.0`, `-0` or `1e3` would be echoed changed; the id is refused instead (see `parse.ts`).
 */

/** The shape of one message: the top-level value, or one element of a batch. */
export interface MessageShape {
  /** Deepest nesting of objects and arrays; the message object itself is level 1, a scalar 0. */
  depth: number;
  /**
   * The text of the message's top-level `id` member when its value is a number, exactly as
   * written (the last `id` member wins, as in `JSON.parse`); undefined for any other id.
   */
  idToken: string | undefined;
}

export interface TextShape {
  /** The top-level value is an array (a batch); `messages` then holds one shape per element. */
  readonly batch: boolean;
  readonly messages: readonly MessageShape[];
  /** Deepest nesting of the whole text (a batch's array counts as one level). */
  readonly depth: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** Characters a JSON number is made of. */
function isNumberChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2b || c === 0x2e || c === 0x65 || c === 0x45;
}

/** Index of the quote that closes the string opened at `open` (escaped quotes skipped). */
function closingQuote(text: string, open: number): number {
  let at = open + 1;
  for (;;) {
    const quote = text.indexOf('"', at);
    if (quote < 0) return text.length;
    let slashes = 0;
    for (let j = quote - 1; text.charCodeAt(j) === BACKSLASH; j--) slashes++;
    if (slashes % 2 === 0) return quote;
    at = quote + 1;
  }
}

/** Whether the member name spanning `open`..`close` (quotes included) is `id`, escapes decoded. */
function isIdName(text: string, open: number, close: number): boolean {
  if (close - open === 3) return text.charCodeAt(open + 1) === 0x69 && text.charCodeAt(open + 2) === 0x64;
  // `"\u0069d"` is also `id`; only short names can be, so only those are decoded.
  if (close - open > 20) return false;
  let escaped = false;
  for (let j = open + 1; j < close; j++) if (text.charCodeAt(j) === BACKSLASH) escaped = true;
  if (!escaped) return false;
  try {
    return JSON.parse(text.slice(open, close + 1)) === 'id';
  } catch {
    return false;
  }
}

/**
 * The shape of JSON text that `JSON.parse` accepted (for other text the answer is meaningless but
 * the scan still ends without throwing). Linear in the text's length; strings are skipped with
 * `indexOf`, so a message made mostly of string content costs little more than a copy.
 */
export function scanJsonShape(text: string): TextShape {
  const n = text.length;
  let i = 0;
  while (i < n && isSpace(text.charCodeAt(i))) i++;
  const batch = text.charCodeAt(i) === OPEN_BRACKET;
  // The depth at which a message's own members sit: inside the top object, or inside an element.
  const level = batch ? 2 : 1;
  const messages: MessageShape[] = [];
  let message: MessageShape | undefined;
  if (!batch) {
    message = { depth: 0, idToken: undefined };
    messages.push(message);
  }
  let depth = 0;
  let maxDepth = 0;
  /** The current message is an object, so strings at `level` alternate name, value. */
  let messageIsObject = false;
  let expectName = false;
  let idNamed = false;
  /** A batch element starts at the next character that is not white space. */
  let elementNext = false;
  for (; i < n; i++) {
    const c = text.charCodeAt(i);
    if (elementNext && !isSpace(c)) {
      elementNext = false;
      if (c !== CLOSE_BRACKET) {
        message = { depth: 0, idToken: undefined };
        messages.push(message);
      }
    }
    switch (c) {
      case QUOTE: {
        const close = closingQuote(text, i);
        if (expectName && depth === level) {
          idNamed = isIdName(text, i, close);
          expectName = false;
        }
        i = close;
        break;
      }
      case OPEN_BRACE:
      case OPEN_BRACKET:
        depth++;
        if (depth > maxDepth) maxDepth = depth;
        if (message !== undefined && depth - level + 1 > message.depth) message.depth = depth - level + 1;
        if (depth === level) {
          messageIsObject = c === OPEN_BRACE;
          expectName = messageIsObject;
        } else if (batch && depth === 1) elementNext = true;
        break;
      case CLOSE_BRACE:
      case CLOSE_BRACKET:
        depth--;
        break;
      case COMMA:
        if (depth === level) expectName = messageIsObject;
        else if (batch && depth === 1) elementNext = true;
        break;
      case COLON: {
        if (!idNamed || depth !== level || message === undefined) break;
        idNamed = false;
        let start = i + 1;
        while (start < n && isSpace(text.charCodeAt(start))) start++;
        let end = start;
        while (end < n && isNumberChar(text.charCodeAt(end))) end++;
        // A later `id` member replaces an earlier one, whatever its type.
        message.idToken = end > start ? text.slice(start, end) : undefined;
        i = end - 1;
        break;
      }
    }
  }
  return { batch, messages, depth: maxDepth };
}

/**
 * Whether the number written as `token` is echoed exactly by `JSON.stringify` after `JSON.parse`:
 * false for integers beyond what a 64-bit float holds (9007199254740993), for forms the parser
 * normalises (`1.0`, `-0`, `1e3`, `0.10`) and for numbers out of range (`1e400`).
 */
export function isExactNumberText(token: string): boolean {
  const value = Number(token);
  return Number.isFinite(value) && String(value) === token;
}
