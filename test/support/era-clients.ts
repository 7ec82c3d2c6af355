/**
 * The official SDK clients of both protocol eras behind one small interface, with their raw traffic
 * recorded, for tests that run the same scenario with either:
 *
 * - `connectModernClient`: the SDK v2 `Client` (`@modelcontextprotocol/client`) with
 *   `versionNegotiation: {mode: 'auto'}`, so it probes with `server/discover` and speaks 2026-07-28
 *   when the server offers it (stateless POSTs, the `_meta` envelope; a request is cancelled by
 *   closing its response stream);
 * - `connectLegacyClient`: the SDK v1 `Client` (`@modelcontextprotocol/sdk`) over Streamable HTTP,
 *   2025-11-25 (a session, `notifications/cancelled`).
 *
 * `sent` and `received` are the JSON-RPC messages at the transport, before the SDK's own dispatch,
 * so a test sees exactly what crossed the wire (e.g. a progress notification that the v1 SDK drops
 * when it lands in the same tick as its response is still recorded).
 */
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
} from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export type WireMessage = Record<string, unknown> & {
  readonly id?: string | number;
  readonly method?: string;
  readonly params?: Record<string, unknown>;
};

export interface ProgressUpdate {
  readonly progress: number;
  readonly total?: number;
  readonly message?: string;
}

export interface CallOptions {
  readonly onprogress?: (progress: ProgressUpdate) => void;
  readonly signal?: AbortSignal;
  readonly timeout?: number;
}

export interface ToolResult {
  readonly content?: readonly { readonly type: string; readonly text?: string }[];
  readonly isError?: boolean;
}

export interface EraClient {
  readonly era: 'modern' | 'legacy';
  /** Every JSON-RPC message the client's transport sent, in order. */
  readonly sent: WireMessage[];
  /** Every JSON-RPC message the client's transport received after `connect`, in order. */
  readonly received: WireMessage[];
  /** What the SDK reported through `onerror`. */
  readonly errors: Error[];
  /** The protocol revision the client negotiated. */
  protocolVersion(): string | undefined;
  /** The `Mcp-Session-Id` (legacy era only). */
  sessionId(): string | undefined;
  callTool(name: string, args: Record<string, unknown>, options?: CallOptions): Promise<ToolResult>;
  close(): Promise<void>;
}

interface RecordableTransport {
  send(message: never, options?: never): Promise<void>;
  onmessage?: ((message: never, extra?: never) => void) | undefined;
}

/** Records what the transport sends from now on, and what it receives once `afterConnect` ran. */
function record(transport: RecordableTransport): {
  sent: WireMessage[];
  received: WireMessage[];
  afterConnect(): void;
} {
  const sent: WireMessage[] = [];
  const received: WireMessage[] = [];
  const send = transport.send.bind(transport) as (message: unknown, options?: unknown) => Promise<void>;
  (transport as { send: (message: unknown, options?: unknown) => Promise<void> }).send = (
    message,
    options,
  ) => {
    for (const m of Array.isArray(message) ? message : [message]) sent.push(m as WireMessage);
    return send(message, options);
  };
  return {
    sent,
    received,
    afterConnect() {
      // The SDK installs its handler in connect(); wrap it so every inbound message is seen first.
      const handler = transport.onmessage as ((message: unknown, extra?: unknown) => void) | undefined;
      (transport as { onmessage?: (message: unknown, extra?: unknown) => void }).onmessage = (
        message,
        extra,
      ) => {
        received.push(message as WireMessage);
        handler?.(message, extra);
      };
    },
  };
}

/** Connects an SDK v2 client with era negotiation (`auto`): 2026-07-28 against a modern server. */
export async function connectModernClient(url: string, name = 'era-matrix-modern'): Promise<EraClient> {
  const client = new ModernClient(
    { name, version: '1.0.0' },
    { capabilities: {}, versionNegotiation: { mode: 'auto' } },
  );
  const transport = new ModernTransport(new URL(url));
  const wire = record(transport as unknown as RecordableTransport);
  const errors: Error[] = [];
  client.onerror = (error) => {
    errors.push(error);
  };
  await client.connect(transport);
  wire.afterConnect();
  return {
    era: 'modern',
    sent: wire.sent,
    received: wire.received,
    errors,
    protocolVersion: () => client.getNegotiatedProtocolVersion(),
    sessionId: () => transport.sessionId,
    callTool: (toolName, args, options = {}) =>
      client.callTool({ name: toolName, arguments: args }, options) as Promise<ToolResult>,
    close: () => client.close(),
  };
}

/** Connects an SDK v1 client over Streamable HTTP (2025-11-25, session-based). */
export async function connectLegacyClient(url: string, name = 'era-matrix-legacy'): Promise<EraClient> {
  const client = new LegacyClient({ name, version: '1.0.0' }, { capabilities: {} });
  const transport = new LegacyTransport(new URL(url));
  const wire = record(transport as unknown as RecordableTransport);
  const errors: Error[] = [];
  client.onerror = (error) => {
    errors.push(error);
  };
  await client.connect(transport);
  wire.afterConnect();
  return {
    era: 'legacy',
    sent: wire.sent,
    received: wire.received,
    errors,
    protocolVersion: () => transport.protocolVersion,
    sessionId: () => transport.sessionId,
    callTool: (toolName, args, options = {}) =>
      client.callTool({ name: toolName, arguments: args }, undefined, options) as Promise<ToolResult>,
    async close() {
      await transport.terminateSession().catch(() => undefined);
      await client.close();
    },
  };
}
