/**
 * The way out of an HTTP upstream transport toward its owner, shared by every era: deliver a
 * message, fail a request with a synthesized error, report a failure nobody waits on, and close
 * exactly once. It enforces the port's contract in one place: nothing is delivered after the
 * transport is closed, `onclose` fires once, and a throwing handler never breaks a stream.
 */
import type { InboundMeta, UpstreamClose, UpstreamTransport } from '../../../core/ports.js';
import type { TransportContext } from '../../../envelope/message-context.js';
import { SbErrorCode, SwitchboardError } from '../../../errors/switchboard-error.js';
import type { Logger } from '../../../observe/logger.js';
import type { Metrics } from '../../../observe/metrics.js';
import type { RequestId } from '../../../protocol/jsonrpc/types.js';
import { malformedResponse, unavailableResponse } from './synthesized-response.js';

/** Who the outlet reports as, and the context of the messages it makes up. */
export interface OutletOptions {
  readonly name: string;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** The context of synthesized messages (they crossed no stream). */
  readonly context: TransportContext;
}

/** The owner-facing side of one transport (see the file comment). */
export class UpstreamOutlet {
  readonly #owner: UpstreamTransport;
  readonly #o: OutletOptions;
  #closed = false;
  #finished = false;

  constructor(owner: UpstreamTransport, options: OutletOptions) {
    this.#owner = owner;
    this.#o = options;
  }

  /** Whether delivery has stopped (the transport is closing, closed or expired). */
  get closed(): boolean {
    return this.#closed;
  }

  /** Stops delivery for good; `finish` reports the close. */
  stop(): void {
    this.#closed = true;
  }

  /** Hands a message to the owner, unless the transport is closed. */
  deliver(text: string, meta: InboundMeta): void {
    if (this.#closed) return;
    try {
      this.#owner.onmessage?.(text, meta);
    } catch (error) {
      this.#o.logger.error(
        { upstream: this.#o.name, err: String(error) },
        'the handler of an upstream message threw',
      );
    }
  }

  /**
   * Something sent upstream failed. A request (`id` given) gets a synthesized error response so
   * that it fails instead of hanging; anything else is reported.
   */
  fail(id: RequestId | undefined, message: string, status?: number): void {
    if (this.#closed) return;
    if (id === undefined) {
      this.report(message, status);
      return;
    }
    this.#o.metrics.inc('upstream_requests_failed_total', { upstream: this.#o.name });
    this.#o.logger.debug({ upstream: this.#o.name, id, status }, message);
    this.deliver(unavailableResponse(id, message, status), {
      transport: this.#o.context,
      relatedUpstreamId: id,
    });
  }

  /**
   * The upstream answered request `id` with something that cannot be read (see
   * `malformedResponse`): it fails with `SB_UPSTREAM_PROTOCOL`, never "unavailable", since the
   * server is there and answering. Counted as a failed request (the reader that found the answer
   * unreadable counts it in `upstream_malformed_total`).
   */
  failMalformed(id: RequestId, message: string, status?: number): void {
    if (this.#closed) return;
    this.#o.metrics.inc('upstream_requests_failed_total', { upstream: this.#o.name });
    this.#o.logger.warn({ upstream: this.#o.name, id, status }, message);
    this.deliver(malformedResponse(id, this.#o.name, message, status), {
      transport: this.#o.context,
      relatedUpstreamId: id,
    });
  }

  /** A failure no request waits on: counted, then `onerror` (or the log when nobody listens). */
  report(message: string, status?: number): void {
    if (this.#closed) return;
    this.#o.metrics.inc('upstream_send_failures_total', { upstream: this.#o.name });
    const error = new SwitchboardError(
      SbErrorCode.UpstreamUnavailable,
      message,
      status === undefined ? undefined : { details: { status } },
    );
    if (this.#owner.onerror) this.#owner.onerror(error);
    else this.#o.logger.warn({ upstream: this.#o.name, status }, message);
  }

  /** Stops delivery and calls `onclose`, once whatever the number of calls. */
  finish(close: UpstreamClose): void {
    this.#closed = true;
    if (this.#finished) return;
    this.#finished = true;
    this.#owner.onclose?.(close);
  }
}
