/**
 * Encoding of Server-Sent Events frames (WHATWG HTML §9.2 "Server-sent events") as strings, for
 * the Streamable HTTP server's `text/event-stream` responses.
 *
 * Every function returns one self-contained block that ends with an empty line, so blocks can be
 * written back to back in any order and a client's parser is always at an event boundary between
 * them. The functions are pure; UTF-8 encoding and writing are the caller's.
 *
 * What SSE cannot carry is refused rather than altered: an `id` or `event` with a line break would
 * split into bogus fields (and an `id` with NUL is silently ignored by clients), so both throw
 * `TypeError`. Line breaks inside `data` are legitimate and become several `data:` lines; a
 * client rejoins them with `\n`, which is the only line break SSE can deliver.
 * @module
 */

/** One SSE event as the server writes it. */
export interface SseEvent {
  /** Sets the client's last event ID (sent back as `Last-Event-ID` on reconnection). */
  readonly id?: string;
  /** The event type; clients treat an absent one as `message`, which is what MCP uses. */
  readonly event?: string;
  /** The payload. `\r\n`, `\r` and `\n` all split it into lines, delivered joined by `\n`. */
  readonly data: string;
  /** Reconnection delay in milliseconds the client must wait before it reconnects. */
  readonly retry?: number;
}

const LINE_BREAK = /\r\n|\r|\n/;
const HAS_LINE_BREAK = /[\r\n]/;
const HAS_LINE_BREAK_OR_NUL = /[\r\n\0]/;

/**
 * Encodes one event: `id:`, `event:`, `retry:` (each when given), then one `data:` line per line
 * of `data`, then the empty line that dispatches it. Every field value follows a single space,
 * which parsers strip, so values that begin with a space survive.
 *
 * @throws TypeError when `id` contains CR, LF or NUL, or `event` contains CR or LF.
 * @throws RangeError when `retry` is not a non-negative safe integer.
 * @example formatEvent({ id: 'k3Jd.7', data: '{"jsonrpc":"2.0","method":"ping"}' })
 * // 'id: k3Jd.7\ndata: {"jsonrpc":"2.0","method":"ping"}\n\n'
 */
export function formatEvent(event: SseEvent): string {
  let frame = '';
  if (event.id !== undefined) {
    if (HAS_LINE_BREAK_OR_NUL.test(event.id)) {
      throw new TypeError('SSE event id must not contain CR, LF or NUL');
    }
    frame += `id: ${event.id}\n`;
  }
  if (event.event !== undefined) {
    if (HAS_LINE_BREAK.test(event.event)) throw new TypeError('SSE event name must not contain CR or LF');
    frame += `event: ${event.event}\n`;
  }
  if (event.retry !== undefined) frame += retryLine(event.retry);
  return frame + prefixLines('data: ', event.data) + '\n';
}

/**
 * A comment block (`: text`), ignored by clients: the keep-alive that stops proxies and load
 * balancers from closing an idle stream. Multi-line text becomes several comment lines.
 */
export function formatComment(text: string): string {
  return prefixLines(': ', text) + '\n';
}

/**
 * A block carrying only `retry:`: sets the client's reconnection delay without dispatching an
 * event. 2025-11-25 servers send it before closing a stream they mean the client to poll again.
 *
 * @throws RangeError when `ms` is not a non-negative safe integer.
 */
export function formatRetry(ms: number): string {
  return retryLine(ms) + '\n';
}

/**
 * The 2025-11-25 priming event (SEP-1699): an `id` with an empty `data` field, sent first on a
 * stream so that the client holds a `Last-Event-ID` to resume with even if the connection drops
 * before any real event. With `retryMs` it also sets the reconnection delay, which lets the server
 * close the connection right away and have the client poll.
 *
 * The empty `data:` line is what makes clients dispatch (and so record) it; MCP clients skip
 * events with empty data. Clients older than 2025-11-25 may choke on it, so only send it to
 * sessions that negotiated that revision or later.
 *
 * @throws TypeError when `id` is empty or contains CR, LF or NUL.
 * @example formatPrimingEvent('k3Jd.1', 3000) // 'id: k3Jd.1\nretry: 3000\ndata: \n\n'
 */
export function formatPrimingEvent(id: string, retryMs?: number): string {
  if (id === '') throw new TypeError('a priming event needs a non-empty id');
  return formatEvent(retryMs === undefined ? { id, data: '' } : { id, data: '', retry: retryMs });
}

function retryLine(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms < 0) {
    throw new RangeError(`SSE retry must be a non-negative integer of milliseconds, got ${ms}`);
  }
  return `retry: ${ms}\n`;
}

/** `prefix` before every line of `text`, each line ended by `\n`. */
function prefixLines(prefix: string, text: string): string {
  if (!HAS_LINE_BREAK.test(text)) return `${prefix}${text}\n`;
  let out = '';
  for (const line of text.split(LINE_BREAK)) out += `${prefix}${line}\n`;
  return out;
}
