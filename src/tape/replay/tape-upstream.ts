/**
 * A tape as an upstream connection: the `UpstreamTransport` adapter whose peer is a
 * `ReplaySession` in the same process instead of a child or a URL. The gateway's router, its
 * downstream transports (stdio, Streamable HTTP of both eras) and its correlation table do
 * everything else exactly as for a live server: the client's ids and progress tokens are mapped,
 * a server→client request reaches the client whose call made it (the replay names that call, as an
 * HTTP upstream's response stream does: `relatedUpstreamId`), a 2026-07-28 client gets it as
 * `input_required`. So the replay is one more adapter on the one port, not a second server.
 */
import type { InboundMeta, UpstreamClose, UpstreamTransport } from '../../core/ports.js';
import type { JsonRpcMessage } from '../../protocol/jsonrpc/types.js';
import type { Wire } from '../../protocol/mcp/reserved-meta.js';
import type { ReplayScript } from './replay-script.js';
import { ReplaySession, type Scheduler } from './replay-session.js';
import type { MatchMode } from './tape-matcher.js';

export interface TapeUpstreamOptions {
  readonly script: ReplayScript;
  readonly mode: MatchMode;
  readonly speed: number;
  readonly warn?: (text: string, data: Record<string, unknown>) => void;
  readonly scheduler?: Scheduler;
}

const TRANSPORT = { kind: 'memory' } as const;

export class TapeUpstream implements UpstreamTransport {
  readonly #session: ReplaySession;
  #closed = false;
  onmessage?: (text: string, meta: InboundMeta) => void;
  onclose?: (close: UpstreamClose) => void;
  onerror?: (error: Error) => void;

  constructor(options: TapeUpstreamOptions) {
    this.#session = new ReplaySession({
      script: options.script,
      mode: options.mode,
      speed: options.speed,
      ...(options.warn ? { warn: options.warn } : {}),
      ...(options.scheduler ? { scheduler: options.scheduler } : {}),
      send: (message, related) => {
        if (this.#closed) return;
        const meta: InboundMeta =
          related === undefined
            ? { transport: TRANSPORT }
            : { transport: TRANSPORT, relatedUpstreamId: related };
        this.onmessage?.(JSON.stringify(message), meta);
      },
    });
  }

  /** Recorded requests not answered yet. */
  get remaining(): number {
    return this.#session.remaining;
  }

  async start(): Promise<void> {}

  send(_json: string, message: JsonRpcMessage): Wire | undefined {
    if (!this.#closed) this.#session.receive(message);
    return undefined;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#session.close();
    this.onclose?.({ reason: 'the replay ended' });
  }
}
