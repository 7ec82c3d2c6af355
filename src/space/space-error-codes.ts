/**
 * The reasons the space refuses something, as they appear in `system/error` payloads
 * (`payload.error`). Stable snake_case strings, like the codec's `MeupErrorCode` (which the space
 * passes through unchanged for envelopes it cannot decode); docs/space.md lists them all.
 */
import type { MeupErrorCode } from '../meup/codec.js';

export const SpaceErrorCode = {
  /** A binary frame, or a MEW stream frame (`#stream#data`): the space carries JSON text envelopes. */
  InvalidFrame: 'invalid_frame',
  /** A frame larger than `space.maxFrameBytes`. */
  FrameTooLarge: 'frame_too_large',
  /** A frame nesting objects and arrays deeper than `server.maxJsonDepth` (never walked). */
  FrameTooDeep: 'frame_too_deep',
  /** `from` is not the participant the connection authenticated as (never overwritten). */
  FromMismatch: 'from_mismatch',
  /** A participant sent a `system/*` kind; they belong to the gateway whatever the capabilities. */
  ReservedKind: 'reserved_kind',
  /** No capability of the sender matches the envelope (`attempted_kind`, `your_capabilities`). */
  CapabilityViolation: 'capability_violation',
  /** `to` names a participant the space does not know. */
  UnknownParticipant: 'unknown_participant',
  /** An `mcp/request` to a server participant together with other recipients, or a fulfilment not sent to a server. */
  InvalidTarget: 'invalid_target',
  /** A payload the kind's handler cannot use (a grant without recipient, a request with params that are not an object...). */
  InvalidPayload: 'invalid_payload',
  /** An MCP method the space does not send upstream (`initialize`: the gateway owns the handshake). */
  UnsupportedMethod: 'unsupported_method',
  /** An envelope id already used by a tracked proposal or grant. */
  DuplicateId: 'duplicate_id',
  /** A reject or withdraw names a proposal the space does not know (or no longer tracks). */
  UnknownProposal: 'unknown_proposal',
  /** The proposal named was already fulfilled, rejected, withdrawn or decided. */
  ProposalClosed: 'proposal_closed',
  /** A withdraw from someone other than the proposer. */
  NotProposer: 'not_proposer',
  /** Deciding a held call (approval) needs an approver role (`policy.approvals.approverRoles`). */
  NotApprover: 'not_approver',
  /**
   * Approving a held call the approver's principal made itself, while four eyes are required
   * (`policy.approvals.allowSelfApproval` false, with authentication).
   */
  SelfApproval: 'self_approval',
  /** A fulfilment that is not the call the approval holds (another server, method or target). */
  ProposalMismatch: 'proposal_mismatch',
  /** `correlation_id` names things this kind cannot refer to (a grant-ack for someone else's grant...). */
  InvalidCorrelation: 'invalid_correlation',
  /** A capability in a grant or revoke that is not a valid pattern (or holds a regular expression). */
  InvalidCapability: 'invalid_capability',
  /** A revoke naming a grant the recipient does not hold. */
  UnknownGrant: 'unknown_grant',
  /** A revoke by capabilities that removed nothing. */
  NothingToRevoke: 'nothing_to_revoke',
  /** A second join frame on a joined connection (or one that contradicts the credentials). */
  AlreadyJoined: 'already_joined',
  /** The join frame or credentials were refused (closing follows). */
  Unauthorized: 'unauthorized',
  /** A MEW join frame naming a space this gateway does not host. */
  UnknownSpace: 'unknown_space',
  /** Too many connections (in total or for this participant). */
  TooManyConnections: 'too_many_connections',
  /** The gateway could not execute the request (an internal failure; logged). */
  Internal: 'internal_error',
} as const;

export type SpaceErrorCode = (typeof SpaceErrorCode)[keyof typeof SpaceErrorCode];

/** Every code a `system/error` of the space may carry: its own and the codec's. */
export type SystemErrorCode = SpaceErrorCode | MeupErrorCode;
