/**
 * The messages an `application/json` answer to one POSTed request holds, in order, and the one
 * among them that is the response: shared by the legacy Streamable HTTP client and the 2026-07-28
 * client, so that both accept the same bodies and name the same faults.
 *
 * Accepted bodies (`docs/eras.md`, "What an upstream's JSON answer may hold"):
 *
 * - one JSON-RPC message (the usual answer);
 * - several messages, one after the other: one per line as the conformance suite's reference
 *   server writes them (a progress notification, then the response), or separated by any JSON
 *   whitespace, or none at all (`{…}{…}`). An object's end is unambiguous, so there is no reading
 *   of such a body that would give other messages; refusing it would only lose the answer;
 * - a JSON-RPC batch (an array of messages) where the era allows one (`allowBatch`: the legacy era,
 *   whose 2025-03-26 revision defines batches; 2026-07-28 has none).
 *
 * Exactly one message must be the response to the request (an error with `id: null` counts: the
 * server refused the request without reading its id); every other message is a related message,
 * delivered before it. Anything else is a fault named precisely: an empty body, text that is not
 * JSON (with the line, column and offset where reading stopped), JSON that is not a JSON-RPC
 * message (which value, and what is wrong with it), no response for the request, a response to
 * another id, two responses, a batch where none is allowed, a response nested past the depth
 * limit. A fault in the text itself drops the whole body (its boundaries cannot be trusted); a
 * body read well but without its response still hands over the related messages it holds.
 *
 * Pure and synchronous; nothing here walks a value deeper than its top-level members, so a message
 * nested past the limit is never serialised or recursed into.
 */

import { isObject } from '../../../protocol/jsonrpc/json-object.js';
import type { MessageShape } from '../../../protocol/jsonrpc/json-shape.js';
import { parseMessage, readJson } from '../../../protocol/jsonrpc/parse.js';
import type { JsonObject, RequestId } from '../../../protocol/jsonrpc/types.js';

/** What may be in the body, besides one message or several. */
export interface JsonAnswerRules {
  /** Whether a JSON array (a JSON-RPC batch) is acceptable. */
  readonly allowBatch: boolean;
  /**
   * Deepest nesting accepted in one message. A response nested deeper is a fault; a related
   * message nested deeper comes back marked `deep`, for the caller to drop (or to hand to the
   * router, which refuses it by its own rules).
   */
  readonly maxDepth: number;
}

/** One message of the body, valid JSON-RPC at its top level. */
export interface AnswerMessage {
  /** The message's own text, exactly as the body wrote it. */
  readonly text: string;
  readonly message: JsonObject;
  /** Set when it nests past `maxDepth`: why, for the log (never walk or serialise it). */
  readonly deep?: string;
}

/** The body read: its related messages in order, and the response or what is wrong. */
export type JsonAnswer =
  | { readonly ok: true; readonly related: readonly AnswerMessage[]; readonly response: AnswerMessage }
  /**
   * `fault` completes "upstream X answered … with ": e.g. `an empty body`. `related` holds the
   * related messages when the text was read well (to be delivered before the failure), else none.
   */
  | { readonly ok: false; readonly related: readonly AnswerMessage[]; readonly fault: string };

/** The longest excerpt of the JSON parser's complaint quoted in a fault. */
const COMPLAINT_CHARS = 120;

/** Reads the answer to request `id` from the whole body `text` (see the file comment). */
export function readJsonAnswer(text: string, id: RequestId, rules: JsonAnswerRules): JsonAnswer {
  const split = splitValues(text);
  if (!split.ok) return { ok: false, related: [], fault: split.fault };
  if (split.values.length === 0) return { ok: false, related: [], fault: 'an empty body' };
  const several = split.values.length > 1;
  const messages: Located[] = [];
  for (const [i, value] of split.values.entries()) {
    const where = several ? `value ${i + 1} of ${split.values.length}, ${place(text, value.start)}` : '';
    if (!Array.isArray(value.value)) {
      messages.push({ ...value, shape: value.shapes[0], where });
      continue;
    }
    if (!rules.allowBatch)
      return {
        ok: false,
        related: [],
        fault: `a JSON-RPC batch${where ? ` (${where})` : ''}, which MCP 2026-07-28 does not allow`,
      };
    if (value.value.length === 0)
      return { ok: false, related: [], fault: `an empty JSON-RPC batch${where ? ` (${where})` : ''}` };
    const texts = elementTexts(value.text);
    for (const [k, element] of value.value.entries())
      messages.push({
        text: texts[k] ?? JSON.stringify(element),
        value: element,
        start: value.start,
        shape: value.shapes[k],
        where: `element ${k + 1} of the batch${where ? ` that is ${where}` : ''}`,
      });
  }
  return pick(messages, id, rules);
}

/** A value of the body with where it is, for faults. */
interface Located {
  readonly text: string;
  readonly value: unknown;
  /** Offset of the value (of its batch, for an element) in the body. */
  readonly start: number;
  readonly shape: MessageShape | undefined;
  /** How a fault names it (`value 2 of 3, line 2, column 1`); empty for the body's only value. */
  readonly where: string;
}

/** Validates each message and finds the response among them. */
function pick(located: readonly Located[], id: RequestId, rules: JsonAnswerRules): JsonAnswer {
  const related: AnswerMessage[] = [];
  let response: AnswerMessage | undefined;
  let stray: string | undefined;
  const named = (item: Located) => (item.where ? ` (${item.where})` : '');
  for (const item of located) {
    // An error with `id: null` refuses the request (the server could not read its id): it is the
    // response, and gets the request's id so that it finds its way back.
    const refusal = isObject(item.value) && item.value.id === null && 'error' in item.value;
    const value = refusal ? { ...(item.value as JsonObject), id } : item.value;
    const parsed = parseMessage(value);
    if (!parsed.ok) {
      const what = parsed.error.message.replace(/^Invalid Request: /, '');
      return { ok: false, related: [], fault: `JSON that is not a JSON-RPC message${named(item)}: ${what}` };
    }
    const message = value as JsonObject;
    const depth = item.shape?.depth ?? 0;
    const deep =
      depth > rules.maxDepth
        ? `it nests ${depth} levels of objects and arrays; the gateway accepts at most ${rules.maxDepth} (maxJsonDepth)`
        : undefined;
    if ('method' in message) {
      related.push(deep === undefined ? { text: item.text, message } : { text: item.text, message, deep });
      continue;
    }
    if (message.id !== id) {
      stray ??= `a response to another request (id ${JSON.stringify(message.id)}${item.where ? `; ${item.where}` : ''}) where the response to id ${JSON.stringify(id)} was due`;
      continue;
    }
    if (response !== undefined)
      return { ok: false, related: [], fault: `two responses to the request (id ${JSON.stringify(id)})` };
    // Checked before anything serialises it: a response too deep is never walked.
    if (deep !== undefined)
      return { ok: false, related: [], fault: `a response too deep${named(item)}: ${deep}` };
    response = { text: refusal ? JSON.stringify(message) : item.text, message };
  }
  if (stray !== undefined) return { ok: false, related, fault: stray };
  if (response === undefined) {
    const held = related.length === 1 ? '1 message' : `${related.length} messages`;
    return { ok: false, related, fault: `${held} and no response to the request (id ${JSON.stringify(id)})` };
  }
  return { ok: true, related, response };
}

// ---------------------------------------------------------------- splitting the text

interface Value {
  readonly text: string;
  readonly value: unknown;
  readonly start: number;
  /** One shape per message: the value's own, or one per element of a batch. */
  readonly shapes: readonly MessageShape[];
}

/** The JSON values the text holds, in order, or where reading stopped. */
function splitValues(
  text: string,
): { readonly ok: true; readonly values: readonly Value[] } | { readonly ok: false; readonly fault: string } {
  // The usual answer, one value, is read in one go.
  const whole = readJson(text);
  if (whole.ok) return { ok: true, values: [asValue(text, 0, whole.value, whole.shape)] };
  const values: Value[] = [];
  let at = skipSpace(text, 0);
  while (at < text.length) {
    const end = valueEnd(text, at);
    const slice = text.slice(at, end);
    const read = readJson(slice);
    if (!read.ok) return { ok: false, fault: notJson(text, at, read.error.message) };
    values.push(asValue(slice, at, read.value, read.shape));
    at = skipSpace(text, end);
  }
  return { ok: true, values };
}

function asValue(
  text: string,
  start: number,
  value: unknown,
  shape: { readonly messages: readonly MessageShape[] },
): Value {
  return { text, value, start, shapes: shape.messages };
}

/**
 * The fault of a value that is not JSON: the parser's complaint, and the place it names (or the
 * value's start when it names none), as line, column and offset in the whole body.
 */
function notJson(text: string, start: number, complaint: string): string {
  let said = complaint.replace(/^Parse error: /, '');
  if (said.length > COMPLAINT_CHARS) said = `${said.slice(0, COMPLAINT_CHARS - 3)}...`;
  const position = / in JSON at position (\d+)/.exec(said);
  if (position === null)
    return `a body that is not JSON in the value at ${place(text, start)} (offset ${start}): ${said}`;
  const offset = start + Number(position[1]);
  return `a body that is not JSON at ${place(text, offset)} (offset ${offset}): ${said.replace(position[0], '')}`;
}

/** `line L, column C` (both from 1) of `offset` in `text`. */
function place(text: string, offset: number): string {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return `line ${line}, column ${offset - lineStart + 1}`;
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function skipSpace(text: string, at: number): number {
  let i = at;
  while (i < text.length && isSpace(text.charCodeAt(i))) i++;
  return i;
}

/** Characters that end a bare token (a number, `true`...). */
function isDelimiter(c: number): boolean {
  return isSpace(c) || c === 0x7b || c === 0x7d || c === 0x5b || c === 0x5d || c === 0x2c || c === 0x22;
}

/** Index of the quote that closes the string opened at `open`, or the text's length. */
function closingQuote(text: string, open: number): number {
  let at = open + 1;
  for (;;) {
    const quote = text.indexOf('"', at);
    if (quote < 0) return text.length;
    let slashes = 0;
    for (let j = quote - 1; text.charCodeAt(j) === 0x5c; j--) slashes++;
    if (slashes % 2 === 0) return quote;
    at = quote + 1;
  }
}

/**
 * The end (exclusive) of the value that starts at `at`: an object or array up to its matching
 * bracket (strings skipped), a string up to its quote, anything else up to a delimiter; always past
 * `at`, so a scan advances. An unterminated value runs to the end of the text, where the JSON
 * parser names what is missing.
 */
function valueEnd(text: string, at: number): number {
  const first = text.charCodeAt(at);
  if (first === 0x22) return Math.min(closingQuote(text, at) + 1, text.length);
  if (first !== 0x7b && first !== 0x5b) {
    let i = at + 1;
    while (i < text.length && !isDelimiter(text.charCodeAt(i))) i++;
    return i;
  }
  let depth = 0;
  for (let i = at; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) i = closingQuote(text, i);
    else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return text.length;
}

/** The text of each element of a JSON array the parser accepted, in order. */
function elementTexts(array: string): string[] {
  const texts: string[] = [];
  let at = skipSpace(array, array.indexOf('[') + 1);
  while (at < array.length && array.charCodeAt(at) !== 0x5d) {
    const end = valueEnd(array, at);
    texts.push(array.slice(at, end));
    at = skipSpace(array, end);
    if (array.charCodeAt(at) === 0x2c) at = skipSpace(array, at + 1);
  }
  return texts;
}
