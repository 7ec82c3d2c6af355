/**
 * Request headers of the HTTP upstream transports. The configured headers come first, lower-cased;
 * the headers the protocol owns are set by the transport and can never be overridden by
 * configuration (a configured `Mcp-Session-Id` would hijack another session).
 */

/** Header names the transports set themselves. */
const PROTOCOL_HEADERS = new Set([
  'accept',
  'content-type',
  'content-length',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
]);

/** The configured headers, lower-cased, without those the protocol owns. */
export function configuredHeaders(
  headers: Readonly<Record<string, string>> | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  if (!headers) return out;
  for (const [name, value] of Object.entries(headers)) {
    const key = name.toLowerCase();
    if (!PROTOCOL_HEADERS.has(key)) out[key] = value;
  }
  return out;
}

/** `Accept` of a POST: clients must list both answer types (MCP Streamable HTTP). */
export const POST_ACCEPT = 'application/json, text/event-stream';
/** `Accept` of a GET stream. */
export const STREAM_ACCEPT = 'text/event-stream';

/** A session id must be visible ASCII (0x21-0x7E), or it cannot be sent back safely. */
export function isValidSessionId(value: string): boolean {
  return /^[\x21-\x7e]+$/.test(value);
}
