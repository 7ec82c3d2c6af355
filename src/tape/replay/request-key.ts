/**
 * What a replayed request is matched on: its method and its params with everything that belongs to
 * the transport, the gateway or the moment removed, rendered as canonical JSON (RFC 8785, the
 * ledger's own `canonicalize`), so two requests that mean the same thing have the same key whatever
 * their member order, JSON-RPC id or progress token.
 *
 * Removed from `params._meta` (and `_meta` itself once empty):
 * - `progressToken`: chosen by each client afresh (the replay rewrites it on the way back);
 * - `traceparent`, `tracestate`, `baggage`: W3C trace context, new on every run;
 * - every member in a transport's or gateway's namespace: `io.modelcontextprotocol/…` (the
 *   2026-07-28 request envelope: protocol version, client info and capabilities, log level),
 *   `io.switchboard/…` and `switchboard.dev/…` (this gateway's own).
 * The JSON-RPC id is never part of the key. Nothing else is touched: a tool's arguments, a URI, a
 * cursor or any other `_meta` member the client chose are compared exactly.
 */
import { canonicalize, type JsonValue, toWellFormedJson } from '../../audit/canonical-json.js';
import { isObject } from '../../protocol/jsonrpc/json-object.js';

/** `_meta` members that never take part in matching (see the file comment). */
const IGNORED_META = new Set(['progressToken', 'traceparent', 'tracestate', 'baggage']);

/** `_meta` namespaces of transports and gateways (see the file comment). */
const IGNORED_META_PREFIXES = ['io.modelcontextprotocol/', 'io.switchboard/', 'switchboard.dev/'];

/** Whether `_meta` member `name` is the transport's or the gateway's, not the client's. */
export function isIgnoredMeta(name: string): boolean {
  return IGNORED_META.has(name) || IGNORED_META_PREFIXES.some((prefix) => name.startsWith(prefix));
}

/**
 * `params` without the members matching ignores, as a JSON value (undefined when there are no
 * params, or nothing is left of an object that held only ignored `_meta`). Never mutates `params`.
 */
export function normaliseParams(params: unknown): JsonValue | undefined {
  if (params === undefined) return undefined;
  const value = toWellFormedJson(params);
  if (!isObject(value)) return value;
  const meta = value._meta;
  if (!isObject(meta)) return Object.keys(value).length === 0 ? undefined : value;
  const kept: { [key: string]: JsonValue } = {};
  for (const [name, member] of Object.entries(meta))
    if (!isIgnoredMeta(name)) kept[name] = member as JsonValue;
  const { _meta: _dropped, ...rest } = value;
  const result: { [key: string]: JsonValue } = Object.keys(kept).length > 0 ? { ...rest, _meta: kept } : rest;
  return Object.keys(result).length === 0 ? undefined : result;
}

/** The match key of a request: its method and canonical normalised params, never its id. */
export function requestKey(method: string, params: unknown): string {
  const normalised = normaliseParams(params);
  return normalised === undefined ? method : `${method} ${canonicalize(normalised)}`;
}
