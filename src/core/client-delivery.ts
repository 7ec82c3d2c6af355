/**
 * Delivery to a client: the one way a message is written to a client session. A server's request
 * passed on gets the gateway's trace context (OpenTelemetry on: `RouterOptions.traceContext`), the
 * message is serialised (unless its text was already made), handed to the session's downstream
 * port, and its `server->client` hop traced. A message that cannot be serialised is dropped, and a
 * port that throws is logged: both are counted (`delivery_errors_total`) and neither reaches the
 * caller, so nothing a client's transport does can break the router's turn.
 */

import type { Logger } from '../observe/logger.js';
import type { Metrics } from '../observe/metrics.js';
import { isRequest, type JsonRpcMessage } from '../protocol/jsonrpc/types.js';
import type { ClientCall } from './client-call.js';
import { type ToClientTrace, toClientHop } from './hops.js';
import type { Delivery } from './ports.js';
import type { TraceContextWriter } from './router-types.js';
import type { Session } from './session.js';
import type { HopFields } from './taps.js';
import { errorText } from './thrown.js';
import { wallNow } from './trace-mapping.js';

/** What delivering to clients needs of the router. */
export interface ClientDeliveryOptions {
  /** Where a message that could not be serialised or sent is logged. */
  readonly logger: Logger;
  /** Where `delivery_errors_total` is counted. */
  readonly metrics: Metrics;
  /** Writes the gateway's trace context into requests passed on to clients (OpenTelemetry on), else undefined. */
  readonly traceContext: TraceContextWriter | undefined;
  /** Hands a hop to the taps (the router's gate applies). */
  readonly hop: (fields: HopFields) => void;
}

/** Writes messages to client sessions and traces each (see the file's comment). */
export class ClientDelivery {
  readonly #logger: Logger;
  readonly #metrics: Metrics;
  readonly #traceContext: TraceContextWriter | undefined;
  readonly #hop: (fields: HopFields) => void;

  /** Delivery with the router's logger, counters, trace-context writer and hop gate. */
  constructor(options: ClientDeliveryOptions) {
    this.#logger = options.logger;
    this.#metrics = options.metrics;
    this.#traceContext = options.traceContext;
    this.#hop = options.hop;
  }

  /**
   * Sends `message` to `session` and traces it as `trace` says. `given` is its text when already
   * made (a response whose result offset was worked out); it is made again if trace context is
   * written into the message. Never throws.
   */
  send(
    session: Session<ClientCall>,
    message: JsonRpcMessage,
    delivery: Delivery,
    trace: ToClientTrace,
    given?: string,
  ): void {
    if (this.#traceContext !== undefined && isRequest(message)) {
      const traced = this.#traceContext.toClient(message, {
        id: trace.id,
        context: trace.context,
        correlation: trace.correlation,
        ...(trace.upstream === undefined ? {} : { upstream: trace.upstream }),
      });
      if (traced !== message) {
        message = traced;
        given = undefined;
      }
    }
    let json: string;
    try {
      json = given ?? JSON.stringify(message);
    } catch (error) {
      // Only a value the gateway built from something deeper than it accepts could get here.
      this.#metrics.inc('delivery_errors_total');
      this.#logger.error(
        { session: session.key, err: errorText(error) },
        'a message for a client could not be serialised; dropped',
      );
      return;
    }
    try {
      session.port.send(json, message, delivery);
    } catch (error) {
      this.#metrics.inc('delivery_errors_total');
      this.#logger.error(
        { session: session.key, err: String(error) },
        'a downstream transport failed to send',
      );
    }
    this.#hop(
      toClientHop(
        session,
        {
          id: trace.id,
          message,
          context: trace.context,
          receivedAt: trace.receivedAt,
          raw: json,
          correlation: trace.correlation,
        },
        wallNow(),
        trace,
      ),
    );
  }
}
