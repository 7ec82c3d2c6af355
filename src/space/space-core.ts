/**
 * What the handlers of particular kinds (`mcp-kinds.ts`, `capability-kinds.ts`,
 * `history-kind.ts`) need from the space: its state, and the three ways out (refuse the envelope,
 * route it, publish the gateway's own).
 */
import type { MeupEnvelope } from '../meup/types.js';
import type { ApprovalBridge } from './approval-bridge.js';
import type { SpaceHistory } from './history.js';
import type { McpCall } from './mcp-bridge.js';
import type { Participants } from './participants.js';
import type { ProposalBook } from './proposals.js';
import type { SpaceConnection } from './space-connection.js';
import type { SystemErrorCode } from './space-error-codes.js';

/** The MCP side the space sends participants' requests to (`McpBridge`). */
export interface McpExecutor {
  /** The router session of a participant's calls to an upstream (opened when needed). */
  sessionKey(participant: string, roles: readonly string[], upstream: string): string;
  call(call: McpCall): string;
  /** The participant has left: release its sessions once their calls are answered. */
  release(participant: string): void;
}

export interface RouteOptions {
  /** The trace session the envelope is recorded under (default: `space`). */
  readonly traceSession?: string | undefined;
  /**
   * When `to` names only the gateway's own participants (a server, an MCP client), deliver to
   * everyone instead of no one: a proposal to a server must reach whoever can fulfil it.
   */
  readonly broadcastIfVirtual?: boolean;
  /**
   * Participants that receive it besides those in `to`, and may read it in the history: the
   * proposers of the proposals a fulfilling `mcp/request` names, which follow the chain proposal →
   * request → response (MEW v0.4 section 3.2.1) although the request is addressed to a server.
   */
  readonly alsoTo?: readonly string[];
}

export interface PublishOptions {
  readonly traceSession?: string | undefined;
  /** Only to these connections (an answer to one connection); default: by `to`. */
  readonly only?: readonly SpaceConnection[];
  /** Whether to keep it in the history (default true). */
  readonly history?: boolean;
  /** Whether to record it in the trace (default true). */
  readonly trace?: boolean;
  readonly broadcastIfVirtual?: boolean;
}

export interface SpaceCore {
  readonly participants: Participants;
  readonly proposals: ProposalBook;
  readonly history: SpaceHistory;
  readonly approvals: ApprovalBridge | undefined;
  readonly mcp: McpExecutor | undefined;
  readonly limits: { readonly maxFrameBytes: number; readonly maxHistoryResults: number };
  /** Answers the sender with `system/error` (correlated to the envelope) and drops the envelope. */
  reject(
    connection: SpaceConnection,
    envelope: MeupEnvelope,
    code: SystemErrorCode,
    message: string,
    details?: Record<string, unknown>,
  ): void;
  /** Delivers a participant's envelope unchanged (by `to`, else to everyone but its sender). */
  route(connection: SpaceConnection, envelope: MeupEnvelope, options?: RouteOptions): void;
  /** Records a participant's envelope in the trace without delivering it (a request to the gateway). */
  record(envelope: MeupEnvelope, traceSession?: string): void;
  /** Sends an envelope the gateway makes (its own, or on behalf of a server or an MCP client). */
  publish(envelope: MeupEnvelope, options?: PublishOptions): void;
  /** Sends `system/welcome` again to every connection of `participant` (its capabilities changed). */
  welcome(participant: string): void;
  /** Whether the connection's participant may decide held calls. */
  isApprover(connection: SpaceConnection): boolean;
}
