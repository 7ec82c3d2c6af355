/**
 * The value encoding of the 2026-07-28 mirrored headers (`Mcp-Name`, `Mcp-Param-{Name}`), for
 * both sides of the gateway (encoding toward modern upstreams, decoding what modern clients send). A header value can only carry printable ASCII, and HTTP drops whitespace around it, so a
 * value that would not survive as is travels as `=?base64?<Base64 of its UTF-8>?=`; so does a plain
 * value that happens to look like that form, which would otherwise be misread. The markers are
 * exact and case-sensitive. Decoding is here too, to compare a forwarded header with the body.
 */

const PREFIX = '=?base64?';
const SUFFIX = '?=';
/** Standard Base64 with padding, as the specification's examples use. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Whether `value` must be sent in the Base64 form: it is empty (an empty header reads as absent),
 * holds a character outside 0x20-0x7E (non-ASCII, controls, tabs), starts or ends with a space, or
 * looks like the sentinel form itself.
 */
export function needsSentinel(value: string): boolean {
  if (value.length === 0) return true;
  if (value.startsWith(PREFIX) && value.endsWith(SUFFIX)) return true;
  if (value.startsWith(' ') || value.endsWith(' ')) return true;
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code > 0x7e) return true;
  }
  return false;
}

/** The header value that carries `value`: itself when safe, else the Base64 sentinel form. */
export function encodeHeaderValue(value: string): string {
  if (!needsSentinel(value)) return value;
  return `${PREFIX}${Buffer.from(value, 'utf8').toString('base64')}${SUFFIX}`;
}

/**
 * The value a header carries: the decoded UTF-8 of a well-formed sentinel form, else the value
 * itself with surrounding spaces and tabs removed (as HTTP parsing does). Undefined when a
 * sentinel form is not valid Base64 or not valid UTF-8.
 */
export function decodeHeaderValue(raw: string): string | undefined {
  const value = raw.replace(/^[ \t]+|[ \t]+$/g, '');
  if (!(value.startsWith(PREFIX) && value.endsWith(SUFFIX) && value.length >= PREFIX.length + SUFFIX.length))
    return value;
  const encoded = value.slice(PREFIX.length, value.length - SUFFIX.length);
  if (!BASE64.test(encoded)) return undefined;
  const bytes = Buffer.from(encoded, 'base64');
  const text = bytes.toString('utf8');
  return Buffer.from(text, 'utf8').equals(bytes) ? text : undefined;
}

/** Whether `value` can be sent as a header value at all (printable ASCII, spaces and tabs). */
export function isSendableHeaderValue(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if ((code < 0x20 && code !== 0x09) || code > 0x7e) return false;
  }
  return true;
}

/** What a received header says: its value, or why it cannot be read. */
export type ReadHeader =
  | { readonly ok: true; readonly value: string }
  | { readonly ok: false; readonly reason: string };

/**
 * A received mirrored header, read as a server must: the sentinel form decoded (and refused when
 * it is not valid Base64 of UTF-8), a plain value trimmed and refused when it holds characters a
 * header can only carry in the sentinel form.
 */
export function readHeaderValue(raw: string): ReadHeader {
  const value = decodeHeaderValue(raw);
  if (value === undefined)
    return { ok: false, reason: 'its =?base64?...?= value is not Base64 of UTF-8 text' };
  const trimmed = raw.replace(/^[ \t]+|[ \t]+$/g, '');
  const sentinel =
    trimmed.startsWith(PREFIX) && trimmed.endsWith(SUFFIX) && trimmed.length >= PREFIX.length + SUFFIX.length;
  if (!sentinel && !isSendableHeaderValue(value))
    return { ok: false, reason: 'it holds characters a header can only carry in the =?base64?...?= form' };
  return { ok: true, value };
}
