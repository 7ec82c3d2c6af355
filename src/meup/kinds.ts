/**
 * MEUP message kinds: the vocabulary the protocol names, which kinds must carry a correlation, and
 * the kind syntax. Kinds are slash-separated lower-case segments (`mcp/request`,
 * `capability/grant-ack`); the dotted spelling of early drafts (`mcp.request`) was replaced by the
 * slash form before v0.2 (ADR-n5r) and is invalid. The vocabulary is open: a well-formed kind that is
 * not listed here (`workflow/complete`) is still a valid kind; capabilities decide who may send it.
 */

/** The kinds listed by the MEUP v0.2 specification. */
export const MEUP_V02_KINDS = [
  'mcp/request',
  'mcp/response',
  'mcp/proposal',
  'mcp/withdraw',
  'mcp/reject',
  'reasoning/start',
  'reasoning/thought',
  'reasoning/conclusion',
  'capability/grant',
  'capability/revoke',
  'capability/grant-ack',
  'space/invite',
  'space/kick',
  'chat',
  'system/presence',
  'system/welcome',
  'system/error',
] as const;

/** Kinds added by the MEW specification after v0.2 (up to its v0.11 release). */
export const MEW_ADDED_KINDS = [
  'reasoning/cancel',
  'space/invite-ack',
  'chat/acknowledge',
  'chat/cancel',
  'participant/pause',
  'participant/resume',
  'participant/status',
  'participant/request-status',
  'participant/forget',
  'participant/compact',
  'participant/compact-done',
  'participant/clear',
  'participant/restart',
  'participant/shutdown',
  'stream/request',
  'stream/open',
  'stream/close',
  'stream/grant-write',
  'stream/revoke-write',
  'stream/transfer-ownership',
  'stream/write-granted',
  'stream/write-revoked',
  'stream/ownership-transferred',
] as const;

/**
 * Kinds the MEW reference implementation uses without the specification naming them. Listed so
 * that peers speaking a MEW dialect are recognised, not because Switchboard relies on them.
 */
export const MEW_IMPLEMENTATION_KINDS = ['system/heartbeat', 'mcp/notification'] as const;

/** A kind this module knows by name. */
export type KnownMeupKind =
  | (typeof MEUP_V02_KINDS)[number]
  | (typeof MEW_ADDED_KINDS)[number]
  | (typeof MEW_IMPLEMENTATION_KINDS)[number];

/** Every kind named above, for lookups. */
export const KNOWN_KINDS: ReadonlySet<string> = new Set<string>([
  ...MEUP_V02_KINDS,
  ...MEW_ADDED_KINDS,
  ...MEW_IMPLEMENTATION_KINDS,
]);

/**
 * Kinds whose envelope MUST name what it answers in `correlation_id` (at least one id): a response
 * without the request it fulfils, or a withdraw/reject without its proposal, cannot be routed to
 * anything, so the codec refuses them.
 */
export const KINDS_REQUIRING_CORRELATION: ReadonlySet<string> = new Set<string>([
  'mcp/response',
  'mcp/withdraw',
  'mcp/reject',
  'chat/acknowledge',
  'chat/cancel',
  'participant/compact-done',
]);

/**
 * Kinds whose payload MUST carry a non-empty string `method` (the JSON-RPC method of the MCP call
 * they carry or propose). This is the only payload shape the codec checks: capability patterns
 * match on `payload.method`, so its absence would make those rules silently inapplicable.
 */
export const KINDS_REQUIRING_METHOD: ReadonlySet<string> = new Set<string>(['mcp/request', 'mcp/proposal']);

/** Whether `kind` is one of the kinds named by MEUP v0.2 or later MEW releases. */
export function isKnownKind(kind: string): kind is KnownMeupKind {
  return KNOWN_KINDS.has(kind);
}

/** Whether an envelope of this kind must carry a non-empty `correlation_id`. */
export function requiresCorrelation(kind: string): boolean {
  return KINDS_REQUIRING_CORRELATION.has(kind);
}

/**
 * Whether `kind` is in the `system/*` namespace, which is reserved to the gateway: the gateway
 * MUST reject such kinds from participants whatever their capabilities (meup.md requirement 7).
 * The codec does not know who sent an envelope, so enforcing this is the gateway's job.
 */
export function isSystemKind(kind: string): boolean {
  return kind === 'system' || kind.startsWith('system/');
}

const SEGMENT = /^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/;

/** Why a kind is malformed, or `undefined` when it is well formed. */
export function kindSyntaxProblem(kind: string): string | undefined {
  if (kind.length === 0) return 'the kind is empty';
  if (!kind.includes('/') && kind.includes('.')) {
    return 'dotted kinds such as "mcp.request" are not MEUP v0.2; use slashes ("mcp/request")';
  }
  for (const segment of kind.split('/')) {
    if (segment.length === 0) return 'the kind has an empty segment (a leading, trailing or doubled "/")';
    if (!SEGMENT.test(segment)) {
      return 'each segment must be lower-case letters and digits, starting with a letter, with single inner hyphens';
    }
  }
  return undefined;
}

/**
 * Whether `kind` is well formed: one or more `/`-separated segments of lower-case letters and
 * digits, each starting with a letter, with single hyphens inside (`capability/grant-ack`). Any
 * dot, colon, upper-case letter or empty segment makes it invalid.
 */
export function isValidKind(kind: string): boolean {
  return kindSyntaxProblem(kind) === undefined;
}
