/**
 * A space for unit tests: the real `MeupSpace` with in-memory connections, a memory logger, the
 * default configuration with overrides, and helpers to send envelopes as participants send them
 * (JSON text frames).
 */
import {
  SPACE_DEFAULTS,
  type SpaceConfig,
  type SpaceParticipantConfig,
} from '../../config/sections/space.js';
import { newEnvelopeId } from '../../meup/ids.js';
import type { MeupProtocol } from '../../meup/types.js';
import { MemoryLogger } from '../../observe/logger.js';
import { Metrics } from '../../observe/metrics.js';
import { ApprovalRegistry } from '../../policy/approvals.js';
import type { TraceRecord } from '../../trace/types.js';
import { ApprovalBridge } from '../approval-bridge.js';
import type { CapabilityPattern } from '../capability-pattern.js';
import { MemoryConnection } from '../memory-connection.js';
import { MeupSpace } from '../meup-space.js';
import type { McpExecutor } from '../space-core.js';

export type Wire = Record<string, unknown>;

export interface KitOptions {
  readonly config?: Partial<SpaceConfig>;
  readonly participants?: readonly (Partial<SpaceParticipantConfig> & { id: string })[];
  readonly defaults?: readonly CapabilityPattern[];
  readonly upstreams?: readonly string[];
  readonly approverRoles?: readonly string[];
  readonly localIsTrusted?: boolean;
  readonly mcp?: McpExecutor;
}

export function makeSpace(options: KitOptions = {}) {
  const metrics = new Metrics();
  const logger = new MemoryLogger();
  const traced: TraceRecord[] = [];
  const config: SpaceConfig = {
    ...SPACE_DEFAULTS,
    ...options.config,
    defaults: {
      ...SPACE_DEFAULTS.defaults,
      ...(options.defaults ? { capabilities: options.defaults } : {}),
    },
    participants: (options.participants ?? []).map((p) => ({ roles: [], tokens: [], ...p })),
  };
  const space = new MeupSpace({
    config,
    upstreams: options.upstreams ?? ['everything'],
    approverRoles: options.approverRoles ?? ['approver'],
    localIsTrusted: options.localIsTrusted ?? false,
    ...(options.mcp ? { mcp: options.mcp } : {}),
    trace: { record: (r) => traced.push(r) },
    logger,
    metrics,
  });
  const join = (
    participant: string,
    o: { roles?: readonly string[]; protocol?: MeupProtocol; capacity?: number } = {},
  ): MemoryConnection => {
    const connection = new MemoryConnection(participant, o);
    space.join(connection);
    return connection;
  };
  /** Sends raw text as a frame from `connection`. */
  const sendText = (connection: MemoryConnection, text: string): void =>
    space.receive(connection, Buffer.from(text), false);
  /** Sends an envelope from `connection`; fields default to a valid envelope from its participant. */
  const send = (connection: MemoryConnection, fields: Wire): Wire => {
    const envelope: Wire = {
      protocol: connection.protocol,
      id: newEnvelopeId(),
      ts: new Date().toISOString(),
      from: connection.participant,
      payload: {},
      ...fields,
    };
    sendText(connection, JSON.stringify(envelope));
    return envelope;
  };
  /** The approvals bridge on a real registry (as serve wires it), started. */
  const withApprovals = (timeoutMs = 60_000, allowSelfApproval = false) => {
    const registry = new ApprovalRegistry({ timeoutMs, allowSelfApproval });
    const bridge = new ApprovalBridge({
      registry,
      host: {
        proposals: space.proposals,
        publish: (envelope, session) =>
          space.publish(envelope, { traceSession: session, broadcastIfVirtual: true }),
      },
      logger,
      metrics,
    });
    space.approvals = bridge;
    bridge.start();
    return { registry, bridge };
  };
  return { space, metrics, logger, traced, config, join, send, sendText, withApprovals };
}

/** The `system/error`s a connection received, as `{code, correlation}`. */
export function errorsOf(
  connection: MemoryConnection,
): { code: unknown; correlation: unknown; payload: Wire }[] {
  return connection.ofKind('system/error').map((e) => ({
    code: (e.payload as Wire).error,
    correlation: e.correlation_id,
    payload: e.payload as Wire,
  }));
}

/** Everything but welcome and presence (what a test usually looks at). */
export function traffic(connection: MemoryConnection): Wire[] {
  return connection.received.filter((e) => e.kind !== 'system/welcome' && e.kind !== 'system/presence');
}
