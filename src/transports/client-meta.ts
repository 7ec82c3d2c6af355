/**
 * What the gateway does with `_meta` members in its own namespace (`switchboard.dev/`) that arrive
 * from a client, on every transport clients use (the legacy and 2026-07-28 HTTP endpoints, stdio),
 * before anything reaches the router and before the gateway adds members of its own.
 *
 * The namespace carries the gateway's instructions to its own transports (`forwardHeaders`: which
 * `Mcp-Param-*` headers to send upstream). Honouring a client's would let it set upstream headers
 * without the endpoint's checks; passing it on would leak it into an upstream's body.
 *
 * A **request** carrying one is refused with -32602 (Invalid params), naming the member, rather than
 * cleaned and served. Nothing legitimate ever sends one (the gateway takes its members out before
 * anything goes upstream, so not even a gateway in front of this one does): a request that does is
 * forged or broken. Serving it without the member would let the client believe it was honoured
 * (that its headers went upstream) and hide a probe of the gateway's internals from the operator;
 * an exact error is what the endpoints answer for every other malformed envelope. A **notification
 * or response** cannot be refused (there is no one to answer, or a server is waiting for it): its
 * members are removed, and both are counted (`client_reserved_meta_total`, by action and transport).
 */
import type { InboundItem, InboundPayload } from '../core/inbound.js';
import type { Metrics } from '../observe/metrics.js';
import type { JsonRpcErrorObject, JsonRpcMessage } from '../protocol/jsonrpc/types.js';
import { gatewayMetaKeys, reservedMetaError, withoutGatewayMeta } from '../protocol/mcp/reserved-meta.js';

/** The error for a request carrying members of the gateway's namespace; undefined for a clean one. */
export function refusalOf(message: JsonRpcMessage): JsonRpcErrorObject | undefined {
  if (!('method' in message) || !('id' in message)) return undefined;
  const keys = gatewayMetaKeys(message);
  return keys.length === 0 ? undefined : reservedMetaError(keys);
}

/**
 * One item of what a client sent, screened: a request with members of the gateway's namespace
 * becomes an error to answer it with, a notification or response loses them, anything else is
 * returned as it is. `transport` labels the counter.
 */
export function screenClientItem(item: InboundItem, metrics: Metrics, transport: string): InboundItem {
  if (item.kind !== 'message') return item;
  const message = item.message;
  if (gatewayMetaKeys(message).length === 0) return item;
  const refusal = refusalOf(message);
  if (refusal && 'id' in message) {
    metrics.inc('client_reserved_meta_total', { action: 'refused', transport });
    return { kind: 'reply', response: { jsonrpc: '2.0', id: message.id, error: refusal } };
  }
  metrics.inc('client_reserved_meta_total', { action: 'removed', transport });
  // `raw` stays the client's own text: the trace records what arrived.
  return { ...item, message: withoutGatewayMeta(message) };
}

/** `screenClientItem` over every item of a payload; the same payload when nothing changed. */
export function screenClientPayload(
  payload: InboundPayload,
  metrics: Metrics,
  transport: string,
): InboundPayload {
  let changed = false;
  const items = payload.items.map((item) => {
    const screened = screenClientItem(item, metrics, transport);
    if (screened !== item) changed = true;
    return screened;
  });
  return changed ? { ...payload, items } : payload;
}
