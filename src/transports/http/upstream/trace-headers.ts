/**
 * The W3C trace context of a request, mirrored from its `params._meta` into the HTTP headers of the
 * POST that carries it (SEP-414: `_meta` is where MCP carries trace context on every transport; an
 * HTTP server's own instrumentation, a proxy or a load balancer in front of it reads the header).
 * The gateway writes `_meta.traceparent` itself when OpenTelemetry is on; when it is off, what a
 * client put there passes through untouched and is mirrored the same way, as a transparent proxy
 * would. Only well-formed values are copied, so text from a client never becomes a malformed header.
 */
import type { JsonRpcMessage } from '../../../protocol/jsonrpc/types.js';

/** `version-traceid-parentid-flags`, lower-case hex (W3C Trace Context, level 1). */
const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
/** Printable ASCII, at most 512 characters (W3C: list members of at most 256 characters, 32 of them). */
const TRACESTATE = /^[\x20-\x7e]{1,512}$/;

/** `headers` plus `traceparent` (and `tracestate`) from `message.params._meta`, or `headers` itself. */
export function withTraceHeaders(
  headers: Readonly<Record<string, string>>,
  message: JsonRpcMessage | undefined,
): Readonly<Record<string, string>> {
  return message === undefined || !('method' in message)
    ? headers
    : withTraceHeadersOf(headers, message.params);
}

/** {@link withTraceHeaders} for a request's `params`. */
export function withTraceHeadersOf(
  headers: Readonly<Record<string, string>>,
  params: unknown,
): Readonly<Record<string, string>> {
  const meta = metaOf(params);
  if (meta === undefined) return headers;
  const traceparent = meta.traceparent;
  if (typeof traceparent !== 'string' || !TRACEPARENT.test(traceparent)) return headers;
  const tracestate = meta.tracestate;
  return typeof tracestate === 'string' && TRACESTATE.test(tracestate)
    ? { ...headers, traceparent, tracestate }
    : { ...headers, traceparent };
}

function metaOf(params: unknown): Record<string, unknown> | undefined {
  if (params === undefined || params === null || typeof params !== 'object' || Array.isArray(params))
    return undefined;
  const meta = (params as Record<string, unknown>)._meta;
  return meta !== null && typeof meta === 'object' && !Array.isArray(meta)
    ? (meta as Record<string, unknown>)
    : undefined;
}
