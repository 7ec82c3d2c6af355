/**
 * Reserved `_meta` members, and taking them out of a message. Two kinds matter to the gateway:
 *
 * - its own namespace (`switchboard.dev/`): set only by the gateway, for its own transports. A
 *   client's are refused or removed where the client's message comes in, and none ever leaves for
 *   an upstream.
 * - the 2026-07-28 envelope (`MODERN_META_KEYS`): a message for a legacy peer is sent as a 2025
 *   client would send it, without them.
 *
 * The `_meta` of a message is `params._meta` for requests and notifications and `result._meta` for
 * results. Nothing is copied when nothing is removed, so the usual message costs one key scan.
 */
import { JsonRpcCode } from '../jsonrpc/codes.js';
import { isObject } from '../jsonrpc/json-object.js';
import type { JsonObject, JsonRpcErrorObject, JsonRpcMessage } from '../jsonrpc/types.js';
import { GATEWAY_META_PREFIX, MODERN_META_KEYS } from './modern-meta.js';

/** Whether a `_meta` key is in the gateway's namespace (the prefix compared without case). */
export function isGatewayMetaKey(key: string): boolean {
  return (
    key.length >= GATEWAY_META_PREFIX.length &&
    key.slice(0, GATEWAY_META_PREFIX.length).toLowerCase() === GATEWAY_META_PREFIX
  );
}

/** Whether a `_meta` key is a member 2026-07-28 defines and the session-based revisions do not. */
export function isModernMetaKey(key: string): boolean {
  return MODERN_META_KEYS.has(key);
}

/** Whether a `_meta` key must not reach a legacy peer: a 2026-07-28 envelope member, or the gateway's. */
export function isModernOrGatewayMetaKey(key: string): boolean {
  return MODERN_META_KEYS.has(key) || isGatewayMetaKey(key);
}

/** Where a message keeps its `_meta`: `params` for a request or notification, else `result`. */
function holderField(message: JsonRpcMessage): 'params' | 'result' {
  return 'method' in message ? 'params' : 'result';
}

/** The object holding a message's `_meta` (`params`, or `result` for a result), if it is one. */
function holderOf(message: JsonRpcMessage): JsonObject | undefined {
  const holder = (message as { params?: unknown; result?: unknown })[holderField(message)];
  return isObject(holder) ? holder : undefined;
}

/** The `_meta` object of a message (`params._meta`, or `result._meta` for a result), if any. */
export function metaOf(message: JsonRpcMessage): JsonObject | undefined {
  const meta = holderOf(message)?._meta;
  return isObject(meta) ? meta : undefined;
}

/** The keys of a message's `_meta` in the gateway's namespace, in order (none: empty). */
export function gatewayMetaKeys(message: JsonRpcMessage): string[] {
  const meta = metaOf(message);
  return meta === undefined ? [] : Object.keys(meta).filter(isGatewayMetaKey);
}

/**
 * A `_meta` object without the members `drop` selects: the same object when there are none, else a
 * copy (the input is never modified).
 */
export function withoutMetaKeys(meta: JsonObject, drop: (key: string) => boolean): JsonObject {
  let copy: JsonObject | undefined;
  for (const key of Object.keys(meta)) {
    if (!drop(key)) continue;
    copy ??= { ...meta };
    delete copy[key];
  }
  return copy ?? meta;
}

/**
 * An object that holds a `_meta` (`params`, a result) without the `_meta` members `drop` selects:
 * the same object when there are none, else a copy (the input is never modified) whose `_meta` is
 * left out when nothing remains in it.
 */
export function withoutHeldMeta(holder: JsonObject, drop: (key: string) => boolean): JsonObject {
  const meta = holder._meta;
  if (!isObject(meta)) return holder;
  const kept = withoutMetaKeys(meta, drop);
  if (kept === meta) return holder;
  const { _meta: _dropped, ...rest } = holder;
  return Object.keys(kept).length === 0 ? rest : { ...rest, _meta: kept };
}

/** The message without the `_meta` members `drop` selects, as {@link withoutHeldMeta} does. */
export function withoutMetaMembers(message: JsonRpcMessage, drop: (key: string) => boolean): JsonRpcMessage {
  const holder = holderOf(message);
  if (holder === undefined) return message;
  const kept = withoutHeldMeta(holder, drop);
  return kept === holder ? message : ({ ...message, [holderField(message)]: kept } as JsonRpcMessage);
}

/** The message without `_meta` members in the gateway's namespace. */
export function withoutGatewayMeta(message: JsonRpcMessage): JsonRpcMessage {
  return withoutMetaMembers(message, isGatewayMetaKey);
}

/** A message and its text, as a transport writes it. */
export interface Wire {
  readonly json: string;
  readonly message: JsonRpcMessage;
}

/**
 * `withoutMetaMembers` for a message about to be written: `json` is returned as it is (and the
 * message object too) when nothing was removed, else the cleaned message serialized.
 */
export function wireWithout(json: string, message: JsonRpcMessage, drop: (key: string) => boolean): Wire {
  const kept = withoutMetaMembers(message, drop);
  return kept === message ? { json, message } : { json: JSON.stringify(kept), message: kept };
}

/**
 * A message as a legacy peer must get it: what a 2025 client (or server) would send, without the
 * 2026-07-28 envelope and without the gateway's own members. `progressToken` and every other
 * member stay, and so do params: a 2025 peer ignores params it does not know, and a server that
 * speaks both eras reads a 2026-07-28 client's `inputResponses` on a legacy session too (the
 * conformance suite's stateless retry relies on it). `json` is returned as it is when nothing was
 * removed.
 */
export function toLegacyWire(json: string, message: JsonRpcMessage): Wire {
  return wireWithout(json, message, isModernOrGatewayMetaKey);
}

/** The error refusing a request whose `_meta` has these members of the gateway's namespace. */
export function reservedMetaError(keys: readonly string[]): JsonRpcErrorObject {
  const named = keys.slice(0, 3).map((k) => JSON.stringify(k.slice(0, 80)));
  if (keys.length > 3) named.push('...');
  return {
    code: JsonRpcCode.InvalidParams,
    message: `Invalid params: _meta may not carry ${named.join(', ')}: the namespace ${GATEWAY_META_PREFIX} is reserved for the gateway`,
  };
}
