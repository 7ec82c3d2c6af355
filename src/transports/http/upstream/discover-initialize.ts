/**
 * A legacy `InitializeResult` made of a 2026-07-28 `DiscoverResult`: how the modern upstream
 * transport answers the router's `initialize` (there is no handshake to forward). The version is
 * the one the client asked for when the gateway speaks it, else the latest legacy revision; the
 * capabilities and instructions are the server's; `serverInfo` comes from the result's `_meta`,
 * with a placeholder naming the upstream when the server gives none (legacy requires one).
 */
import { JsonRpcCode } from '../../../protocol/jsonrpc/codes.js';
import { isObject } from '../../../protocol/jsonrpc/json-object.js';
import type { JsonObject, JsonRpcErrorObject } from '../../../protocol/jsonrpc/types.js';
import { MCP_REVISIONS, MODERN_REVISION, negotiateLegacyRevision } from '../../../protocol/mcp/revisions.js';
import { META } from './request-envelope.js';

/** The initialize result and the server's capabilities, or why the server cannot be used. */
export type DiscoveredInitialize =
  | { readonly ok: true; readonly result: JsonObject; readonly capabilities: JsonObject }
  | { readonly ok: false; readonly error: JsonRpcErrorObject };

/**
 * The `InitializeResult` for a client that asked for `requested`, from `discover` (the result of
 * `server/discover` of `upstream`). A server whose `supportedVersions` lacks 2026-07-28 is refused
 * with -32022: the gateway would speak a version it does not accept.
 */
export function initializeFromDiscover(
  discover: unknown,
  requested: unknown,
  upstream: string,
): DiscoveredInitialize {
  const result = isObject(discover) ? discover : {};
  const versions = result.supportedVersions;
  if (Array.isArray(versions) && !versions.includes(MODERN_REVISION)) {
    return {
      ok: false,
      error: {
        code: JsonRpcCode.UnsupportedProtocolVersion,
        message: `upstream ${upstream} supports ${versions.join(', ')}, not ${MODERN_REVISION}, the version the gateway speaks to modern servers`,
        data: { supported: versions, requested: MODERN_REVISION },
      },
    };
  }
  const capabilities = isObject(result.capabilities) ? result.capabilities : {};
  const meta = isObject(result._meta) ? result._meta : {};
  const info = meta[META.serverInfo];
  const serverInfo =
    isObject(info) && typeof info.name === 'string' && typeof info.version === 'string'
      ? info
      : { name: upstream, version: 'unknown' };
  const initialize: JsonObject = {
    protocolVersion: negotiateLegacyRevision(requested, MCP_REVISIONS),
    capabilities,
    serverInfo,
  };
  if (typeof result.instructions === 'string') initialize.instructions = result.instructions;
  return { ok: true, result: initialize, capabilities };
}
