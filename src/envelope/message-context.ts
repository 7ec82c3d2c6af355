/**
 * The metadata that travels with every message (seed 001): direction, session, transport and timing.
 * All values are plain immutable data; builders on `MessageEnvelope` derive new contexts.
 */
import { DEFAULT_REVISION, type ProtocolVersion } from '../protocol/mcp/revisions.js';
import type { Direction } from './direction.js';

export type SessionState = 'uninitialized' | 'initializing' | 'active' | 'closing' | 'closed';

export interface SessionContext {
  /** Absent before a session exists (e.g. the first `initialize`). */
  readonly id?: string;
  /** The negotiated MCP revision, or the default until negotiation completes. */
  readonly protocolVersion: ProtocolVersion;
  readonly state: SessionState;
}

export type TransportKind = 'stdio' | 'http' | 'sse' | 'websocket' | 'memory' | 'unknown';

export interface StdioTransportContext {
  readonly kind: 'stdio';
  /** The child process's pid when the message crossed the upstream pipe. */
  readonly pid?: number;
}

export interface HttpTransportContext {
  readonly kind: 'http';
  readonly method: string;
  readonly path: string;
  /** Lower-cased header names; credentials are never stored here (see `safeHeaders`). */
  readonly headers: Readonly<Record<string, string>>;
  readonly status?: number;
}

export interface SseTransportContext {
  readonly kind: 'sse';
  readonly streamId: string;
  readonly eventId?: string;
  readonly retryMs?: number;
  readonly lastEventId?: string;
}

export interface WebSocketTransportContext {
  readonly kind: 'websocket';
  readonly connectionId?: string;
}

export interface MemoryTransportContext {
  readonly kind: 'memory';
}

/** Used only for messages built without a transport (compatibility, tests). */
export interface UnknownTransportContext {
  readonly kind: 'unknown';
}

export type TransportContext =
  | StdioTransportContext
  | HttpTransportContext
  | SseTransportContext
  | WebSocketTransportContext
  | MemoryTransportContext
  | UnknownTransportContext;

/** Times in milliseconds: `received`, `processing*` and `sent` are monotonic (`performance.now()`). */
export interface TimingContext {
  readonly received: number;
  /** Wall-clock time (epoch ms) at `received`. */
  readonly wallClock: number;
  readonly processingStarted?: number;
  readonly processingCompleted?: number;
  readonly sent?: number;
}

export interface MessageContext {
  readonly direction: Direction;
  readonly session: SessionContext;
  readonly transport: TransportContext;
  readonly timing: TimingContext;
}

export function anonymousSession(): SessionContext {
  return { protocolVersion: DEFAULT_REVISION, state: 'uninitialized' };
}

export function timingNow(): TimingContext {
  return { received: performance.now(), wallClock: Date.now() };
}

/** Seed 001's `MessageContext::minimal()`: unknown direction and transport, anonymous session. */
export function minimalContext(): MessageContext {
  return {
    direction: 'unknown',
    session: anonymousSession(),
    transport: { kind: 'unknown' },
    timing: timingNow(),
  };
}

const SECRET_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie', 'set-cookie', 'x-api-key']);

/**
 * Header metadata safe to keep in an envelope: names lower-cased, credentials replaced by a marker
 * so that a trace or a log can never leak a client's token.
 */
export function safeHeaders(
  headers: Readonly<Record<string, string | readonly string[] | undefined>>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const key = name.toLowerCase();
    out[key] = SECRET_HEADERS.has(key)
      ? '[REDACTED]'
      : Array.isArray(value)
        ? value.join(', ')
        : String(value);
  }
  return out;
}
