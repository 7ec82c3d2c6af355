/**
 * The factory of HTTP upstream transports, one per protocol era the client speaks: the stateless
 * Streamable HTTP of 2026-07-28 (`modern-http`), the Streamable HTTP with sessions of
 * 2025-03-26..2025-11-25 (`streamable-http`), the 2024-11-05 HTTP+SSE transport (`sse`), and both
 * of the first two to a server that speaks both eras, chosen per request (`dual-http`). Which
 * one an upstream needs is found by the era probe (`era-probe.ts`) and the legacy client's own
 * fallback, and remembered by the caller (`EraCache`, the supervisor's learnt kind).
 */
import type { UpstreamTransport } from '../../../core/ports.js';
import type { HttpTransportContext } from '../../../envelope/message-context.js';
import { DualEraTransport } from './dual-era-transport.js';
import { LegacySseTransport } from './legacy-sse.js';
import { type InitializeRejection, LegacyStreamableHttpTransport } from './legacy-streamable-http.js';
import { type ModernHttpOptions, ModernHttpTransport } from './modern-http.js';

/**
 * The wire protocols of HTTP upstreams: 2026-07-28 stateless Streamable HTTP, Streamable HTTP with
 * sessions (2025-03-26..2025-11-25), 2024-11-05 HTTP+SSE, or the first two side by side to a
 * server that speaks both eras (each request in its client's era).
 */
export type HttpUpstreamKind = 'modern-http' | 'streamable-http' | 'sse' | 'dual-http';

/** An era's transport: the port, plus what the facade and the router need to know about it. */
export interface EraTransport extends UpstreamTransport {
  readonly kind: HttpUpstreamKind;
  readonly transportContext: HttpTransportContext;
  /** The upstream session id, for eras that have sessions. */
  readonly sessionId?: string | undefined;
  /** The negotiated protocol version, for eras that negotiate it on the wire. */
  readonly protocolVersion?: string | undefined;
}

/** Callbacks from an era transport to the facade that owns it. */
export interface EraHooks {
  /** Streamable HTTP (and its half of `dual-http`) only: the `initialize` POST got 400, 404 or 405. */
  readonly onInitializeRejected?: (rejection: InitializeRejection) => void;
  /** 2026-07-28 only: the `server/discover` behind `initialize` got no JSON-RPC answer. */
  readonly onDiscoverFailed?: () => void;
}

/** Creates the transport of `kind`; nothing is sent before `start()`/`send()`. */
export function createEraTransport(
  kind: HttpUpstreamKind,
  options: ModernHttpOptions,
  hooks: EraHooks = {},
): EraTransport {
  switch (kind) {
    case 'modern-http':
      return new ModernHttpTransport({ ...options, ...hooks });
    case 'streamable-http':
      return new LegacyStreamableHttpTransport({ ...options, ...hooks });
    case 'sse':
      return new LegacySseTransport(options);
    case 'dual-http':
      return new DualEraTransport({
        ...options,
        ...(hooks.onInitializeRejected ? { onInitializeRejected: hooks.onInitializeRejected } : {}),
      });
  }
}
