/**
 * The real MCP protocol revisions and what each allows. (The Shadowcat seed's default
 * `2025-11-05` is not a revision and is deliberately absent.)
 */
export const MCP_REVISIONS = ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25', '2026-07-28'] as const;
export type McpRevision = (typeof MCP_REVISIONS)[number];

/** A protocol version string as a peer sent it; known revisions are `McpRevision`. */
export type ProtocolVersion = McpRevision | (string & {});

export type Era = 'legacy' | 'modern';

export const LATEST_LEGACY_REVISION: McpRevision = '2025-11-25';
export const MODERN_REVISION: McpRevision = '2026-07-28';
/** Assumed when a legacy HTTP request carries no MCP-Protocol-Version header (spec 2025-06-18). */
export const HTTP_DEFAULT_REVISION: McpRevision = '2025-03-26';
/** Recorded for a session before a version is negotiated. */
export const DEFAULT_REVISION: McpRevision = LATEST_LEGACY_REVISION;

export function isKnownRevision(value: unknown): value is McpRevision {
  return typeof value === 'string' && (MCP_REVISIONS as readonly string[]).includes(value);
}

export function eraOf(revision: ProtocolVersion): Era {
  return revision === MODERN_REVISION ? 'modern' : 'legacy';
}

/** JSON-RPC batches are part of MCP only in 2025-03-26. */
export function allowsBatch(revision: ProtocolVersion): boolean {
  return revision === '2025-03-26';
}

/**
 * Version negotiation for a legacy `initialize`: the client's version when the gateway supports it,
 * otherwise the latest legacy revision the gateway speaks (the client then decides whether to go on).
 */
export function negotiateLegacyRevision(requested: unknown, supported: readonly McpRevision[]): McpRevision {
  if (isKnownRevision(requested) && supported.includes(requested) && eraOf(requested) === 'legacy')
    return requested;
  const legacy = supported.filter((r) => eraOf(r) === 'legacy');
  return legacy[legacy.length - 1] ?? LATEST_LEGACY_REVISION;
}
