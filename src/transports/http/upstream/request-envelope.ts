/**
 * The per-request envelope of MCP 2026-07-28: what a legacy session said once in `initialize`
 * (client identity, capabilities) and `logging/setLevel` (log level), a modern request carries in
 * every `params._meta`. The gateway's router speaks the legacy shape, so the modern upstream
 * transport remembers those values and adds them to each request it sends.
 *
 * A request that already carries `io.modelcontextprotocol/protocolVersion` in `_meta` comes from a
 * modern client of the gateway: its envelope is that client's own and is sent untouched. Either
 * way the gateway's own `switchboard.dev/` members (`forwardHeaders`: client `Mcp-Param-*` headers
 * the modern endpoint hands on) are taken out of the body: they are transport information, not MCP.
 */

import { isObject } from '../../../protocol/jsonrpc/json-object.js';
import type { JsonObject } from '../../../protocol/jsonrpc/types.js';
import {
  META_CAPABILITIES,
  META_CLIENT_INFO,
  META_FORWARD_HEADERS,
  META_LOG_LEVEL,
  META_SERVER_INFO,
  META_SUBSCRIPTION_ID,
  META_VERSION,
} from '../../../protocol/mcp/modern-meta.js';
import {
  isGatewayMetaKey,
  isModernOrGatewayMetaKey,
  withoutMetaKeys,
} from '../../../protocol/mcp/reserved-meta.js';
import { MODERN_REVISION } from '../../../protocol/mcp/revisions.js';

/** The reserved `_meta` keys of 2026-07-28 this transport reads or writes. */
export const META = {
  protocolVersion: META_VERSION,
  clientInfo: META_CLIENT_INFO,
  clientCapabilities: META_CAPABILITIES,
  logLevel: META_LOG_LEVEL,
  serverInfo: META_SERVER_INFO,
  subscriptionId: META_SUBSCRIPTION_ID,
} as const;

/** Client `Mcp-Param-*` headers the modern endpoint hands on; never sent upstream in the body. */
export const FORWARD_HEADERS_KEY = META_FORWARD_HEADERS;

/** What a legacy session declared, sent in `_meta` of every request that has no envelope of its own. */
export interface SessionEnvelope {
  /** `initialize`'s `clientInfo`, once seen. */
  clientInfo?: JsonObject;
  /** `initialize`'s `capabilities` (`{}` until then: "supports no optional capabilities"). */
  clientCapabilities: JsonObject;
  /** The level of the last `logging/setLevel`; absent: the upstream sends no log messages. */
  logLevel?: string;
}

/** A request's params ready to send, and what was learnt while preparing them. */
export interface PreparedParams {
  readonly params: JsonObject;
  /** The request carried its own modern envelope (a modern client): results go back untouched. */
  readonly modern: boolean;
  /** The raw `switchboard.dev/forwardHeaders` value, if the request had one. */
  readonly forwarded?: unknown;
}

/** Whether `params` carries a modern envelope (`_meta["io.modelcontextprotocol/protocolVersion"]`). */
export function hasModernEnvelope(params: unknown): boolean {
  return isObject(params) && isObject(params._meta) && META.protocolVersion in params._meta;
}

/** The `_meta` of a request sent by the gateway itself (discovery, tool listing, subscriptions). */
export function envelopeMeta(envelope: SessionEnvelope): JsonObject {
  const meta: JsonObject = { [META.protocolVersion]: MODERN_REVISION };
  if (envelope.clientInfo) meta[META.clientInfo] = envelope.clientInfo;
  meta[META.clientCapabilities] = envelope.clientCapabilities;
  return meta;
}

/**
 * The params to send for a request: a copy (the input is never modified) without any member of the
 * gateway's `switchboard.dev/` namespace, with the session's envelope unless the request brought its
 * own. A legacy request's own 2026-07-28 envelope members (a legacy client has no business setting
 * them) give way to the session's: its envelope is exactly what the session declared. Undefined
 * params become `{}` (every modern request has `_meta`). Array params cannot carry `_meta`:
 * undefined then.
 *
 * The forward key is honoured only on a modern request: the modern endpoint sets it on nothing
 * else, so on a legacy one it can only be a client's own (which the client transports refuse), and
 * it is dropped unread.
 */
export function prepareParams(params: unknown, envelope: SessionEnvelope): PreparedParams | undefined {
  if (params !== undefined && !isObject(params)) return undefined;
  const copy: JsonObject = { ...params };
  const ownMeta = isObject(copy._meta) ? copy._meta : {};
  const modern = META.protocolVersion in ownMeta;
  const hadForward = modern && FORWARD_HEADERS_KEY in ownMeta;
  const forwarded = hadForward ? ownMeta[FORWARD_HEADERS_KEY] : undefined;
  if (modern) copy._meta = withoutMetaKeys(ownMeta, isGatewayMetaKey);
  else {
    const meta: JsonObject = {
      ...withoutMetaKeys(ownMeta, isModernOrGatewayMetaKey),
      ...envelopeMeta(envelope),
    };
    if (envelope.logLevel !== undefined) meta[META.logLevel] = envelope.logLevel;
    copy._meta = meta;
  }
  return hadForward ? { params: copy, modern, forwarded } : { params: copy, modern };
}

/** The protocol version a request's envelope names (what `MCP-Protocol-Version` must equal). */
export function envelopeVersion(params: JsonObject): string {
  const meta = params._meta;
  const version = isObject(meta) ? meta[META.protocolVersion] : undefined;
  return typeof version === 'string' ? version : MODERN_REVISION;
}
