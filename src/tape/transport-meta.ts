/**
 * Which `_meta` members are transport noise: what a client, a gateway or a transport adds to a
 * message on its way, and that says nothing about the call itself. Replay matches requests, and
 * `tape check` compares answers, with these members taken out, so a tape recorded through one
 * transport (a trace context, a progress token, the 2026-07-28 envelope a bridge adds) still
 * matches a run through another.
 *
 * The noise: `progressToken` (the client picks a fresh one per call), the W3C trace context
 * (`traceparent`, `tracestate`, `baggage`), the 2026-07-28 envelope members (`MODERN_META_KEYS`:
 * protocol version, client and server info, capabilities, log level, subscription id), and the
 * gateway's own namespaces (`switchboard.dev/`, `io.switchboard/`). Everything else in `_meta`
 * (e.g. `io.modelcontextprotocol/related-task`, a server's own members) is part of the message.
 *
 * Shared by the checker (issue 23); the replay matcher should use the same rule (one file, so the
 * two cannot disagree on what a tape "means").
 */
import { isObject } from '../protocol/jsonrpc/json-object.js';
import type { JsonObject } from '../protocol/jsonrpc/types.js';
import { isModernOrGatewayMetaKey } from '../protocol/mcp/reserved-meta.js';

const TRACE_CONTEXT = new Set(['progressToken', 'traceparent', 'tracestate', 'baggage']);

/** Whether a `_meta` member is transport noise (see the module comment). */
export function isTransportMetaKey(key: string): boolean {
  return TRACE_CONTEXT.has(key) || isModernOrGatewayMetaKey(key) || key.startsWith('io.switchboard/');
}

/**
 * `holder` (a request's `params` or a response's `result`) without the transport members of its
 * `_meta`, and without `_meta` when nothing else is left in it. The same object when there is
 * nothing to take out; `holder` is never changed.
 */
export function withoutTransportMeta<T>(holder: T): T {
  if (!isObject(holder) || !isObject(holder._meta)) return holder;
  const meta = holder._meta;
  const keys = Object.keys(meta);
  if (!keys.some(isTransportMetaKey)) return holder;
  const kept: JsonObject = {};
  for (const key of keys) if (!isTransportMetaKey(key)) kept[key] = meta[key];
  const { _meta: _dropped, ...rest } = holder;
  return (Object.keys(kept).length === 0 ? rest : { ...rest, _meta: kept }) as T;
}
