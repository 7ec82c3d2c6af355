/**
 * The per-request `_meta` envelope of the 2026-07-28 revision. A request carrying the
 * protocol-version key "claims" the modern era: that claim, not the method, is what tells a modern
 * request from a legacy one on a dual-era endpoint.
 */

import { isObject } from '../jsonrpc/json-object.js';
import { MCP_REVISIONS } from './revisions.js';

export const META_VERSION = 'io.modelcontextprotocol/protocolVersion';
export const META_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
export const META_LOG_LEVEL = 'io.modelcontextprotocol/logLevel';
export const META_SERVER_INFO = 'io.modelcontextprotocol/serverInfo';
export const META_SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';
export const META_CLIENT_INFO = 'io.modelcontextprotocol/clientInfo';
/**
 * The `_meta` members 2026-07-28 defines and the session-based revisions do not: the per-request
 * envelope (version, client identity and capabilities, log level) and what servers stamp on their
 * answers and listen-stream notifications. A 2025 peer never sends them, and a message bound for a
 * legacy peer must not carry them: a dual-era server reads the version member as a claim of
 * 2026-07-28 and refuses it when the `MCP-Protocol-Version` header says otherwise. `progressToken`
 * (both eras) and `io.modelcontextprotocol/related-task` (2025-11-25) are not among them.
 */
export const MODERN_META_KEYS: ReadonlySet<string> = new Set([
  META_VERSION,
  META_CLIENT_INFO,
  META_CAPABILITIES,
  META_LOG_LEVEL,
  META_SERVER_INFO,
  META_SUBSCRIPTION_ID,
]);
/**
 * The gateway's own `_meta` namespace (not MCP). Members under it are set by the gateway for its
 * own transports and taken out before anything is sent upstream; a client may never set them.
 */
export const GATEWAY_META_PREFIX = 'switchboard.dev/';
/**
 * The gateway's own key: where the modern endpoint hands a client's `Mcp-Param-*` headers
 * (lower-cased name to raw value) to a modern upstream's transport, which sends them unchanged and
 * takes the key out of the body.
 */
export const META_FORWARD_HEADERS = 'switchboard.dev/forwardHeaders';

/**
 * The version a message's `_meta` envelope claims: undefined when there is no claim, the string
 * when there is one, `null` for a claim that is not a string (malformed).
 */
export function envelopeClaim(message: unknown): string | null | undefined {
  if (!isObject(message) || !isObject(message.params) || !isObject(message.params._meta)) return undefined;
  const meta = message.params._meta;
  if (!(META_VERSION in meta)) return undefined;
  const value = meta[META_VERSION];
  return typeof value === 'string' ? value : null;
}

/** Every revision the gateway serves, newest first (the `supported` list of -32022 errors). */
export const SUPPORTED_NEWEST_FIRST: readonly string[] = [...MCP_REVISIONS].reverse();
