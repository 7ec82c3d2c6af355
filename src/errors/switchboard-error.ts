/**
 * Local errors: failures that are the gateway's own (configuration, I/O, supervision). Each has a
 * stable string code that never changes meaning; docs/errors.md lists them all. Errors that cross
 * the wire are JSON-RPC errors instead (see `to-jsonrpc-error.ts` for the one conversion).
 */
export const SbErrorCode = {
  ConfigInvalid: 'SB_CONFIG_INVALID',
  ConfigNotFound: 'SB_CONFIG_NOT_FOUND',
  UsageError: 'SB_USAGE',
  DataDirUnusable: 'SB_DATA_DIR',
  UpstreamExited: 'SB_UPSTREAM_EXITED',
  UpstreamUnavailable: 'SB_UPSTREAM_UNAVAILABLE',
  UpstreamSpawnFailed: 'SB_UPSTREAM_SPAWN',
  UpstreamProtocol: 'SB_UPSTREAM_PROTOCOL',
  RouteUnresolved: 'SB_ROUTE_UNRESOLVED',
  RequestTimeout: 'SB_REQUEST_TIMEOUT',
  MessageTooLarge: 'SB_MESSAGE_TOO_LARGE',
  Unroutable: 'SB_UNROUTABLE',
  PolicyDenied: 'SB_POLICY_DENIED',
  ApprovalRejected: 'SB_APPROVAL_REJECTED',
  /** An approver approving a call it made itself, while four eyes are required. */
  SelfApproval: 'SB_SELF_APPROVAL',
  AuditUnavailable: 'SB_AUDIT_UNAVAILABLE',
  LimitExceeded: 'SB_LIMIT_EXCEEDED',
  /** `tape replay`: a request the tape holds no answer for (the error names the closest recorded one). */
  TapeNoMatch: 'SB_TAPE_NO_MATCH',
  Unauthorized: 'SB_UNAUTHORIZED',
  Cancelled: 'SB_CANCELLED',
  ShuttingDown: 'SB_SHUTTING_DOWN',
  TraceStore: 'SB_TRACE_STORE',
  /** A tape that cannot be read (the message names the file and the line). */
  TapeInvalid: 'SB_TAPE_INVALID',
  /** A tape export whose trace kept digests, not payloads, for some calls (`--allow-incomplete`). */
  TapeIncomplete: 'SB_TAPE_INCOMPLETE',
  Internal: 'SB_INTERNAL',
} as const;

export type SbErrorCode = (typeof SbErrorCode)[keyof typeof SbErrorCode];

const BRAND = Symbol.for('switchboard.SwitchboardError');

export class SwitchboardError extends Error {
  readonly code: SbErrorCode;
  readonly details?: Readonly<Record<string, unknown>>;

  constructor(
    code: SbErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SwitchboardError';
    this.code = code;
    if (options?.details) this.details = options.details;
    Object.defineProperty(this, BRAND, { value: true });
  }

  /** `instanceof` that also works across separately bundled copies of the library. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }
}
