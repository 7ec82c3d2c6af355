/**
 * How a client call ends: the one way (`finish`), once per call however it ends (answered by an
 * upstream or the gateway, refused, cancelled, failed, its session closed). The interceptors'
 * `complete` see the response and may replace or hold it (through `runInterceptors`, in the same
 * turn while they answer at once); then it is delivered to the client unless the client no longer
 * wants it, and the interceptors' `delivered` run. It also counts the calls in flight, for the
 * drain.
 */

import { SbErrorCode } from '../errors/switchboard-error.js';
import { gatewayError } from '../errors/to-jsonrpc-error.js';
import { newEnvelopeId } from '../meup/ids.js';
import type { Logger } from '../observe/logger.js';
import type { Metrics } from '../observe/metrics.js';
import { resultTextOffset } from '../protocol/jsonrpc/result-text.js';
import type { JsonRpcErrorObject, JsonRpcMessage, JsonRpcResponse } from '../protocol/jsonrpc/types.js';
import { observeCallEnd } from './call-observation.js';
import { runInterceptors } from './call-pipeline.js';
import { type ClientCall, callInfoOf } from './client-call.js';
import type { ToClientTrace } from './hops.js';
import type { Observations } from './observations.js';
import type { Delivery } from './ports.js';
import type { CallInterceptor, CallOutcome } from './router-types.js';
import type { Session } from './session.js';
import type { TapBus } from './taps.js';
import { errorText } from './thrown.js';

/** A tool result that says `isError: true` (the tool's own failure, not a JSON-RPC error). */
function isErrorResult(result: unknown): boolean {
  return typeof result === 'object' && result !== null && (result as { isError?: unknown }).isError === true;
}

/** An interceptor that has a `complete`. */
type Completer = CallInterceptor & Required<Pick<CallInterceptor, 'complete'>>;

/** How a call ends, beyond its payload (`CallFinisher.finish`). */
export interface FinishOptions {
  /** Trace ids of the upstream responses the answer was built from (default none). */
  readonly derivedFrom?: readonly string[];
  /** False when the client no longer wants the response: cancelled, or its session ended (default true). */
  readonly deliver?: boolean;
  /** The upstream that answered, for the trace. */
  readonly upstream?: string;
}

/** A call that has ended, on its way through `complete` to its client. */
interface Ending {
  readonly call: ClientCall;
  readonly derivedFrom: readonly string[];
  /** False when the client no longer wants the response (cancelled, or its session ended). */
  readonly deliver: boolean;
  readonly upstream: string | undefined;
  /** The completers when the call ended (the list is replaced, never changed, when one is added). */
  readonly completers: readonly CallInterceptor[];
  /** The interceptors with a `delivered`, when the call ended (likewise). */
  readonly deliverers: readonly CallInterceptor[];
  readonly outcome: CallOutcome;
}

export const NONE: readonly string[] = Object.freeze([]);

/** What ending calls needs of the router. */
export interface CallFinisherOptions {
  /** Who hears of calls, upstream requests, sessions and links (`observations.ts`). */
  readonly observations: Observations;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** Asked whether a response's hop is wanted (then where its result is in the text is worked out). */
  readonly taps: Pick<TapBus, 'wants'>;
  /** Sends a message to a client session (`json`: its text, already made), and traces it. */
  readonly deliver: (
    session: Session<ClientCall>,
    message: JsonRpcMessage,
    delivery: Delivery,
    trace: ToClientTrace,
    json: string,
  ) => void;
}

export class CallFinisher {
  readonly #o: CallFinisherOptions;
  /**
   * The interceptors with a `complete`, and those with a `delivered`, in the order they were added.
   * Replaced (never changed) when one is added, so a call in progress keeps the list it started with.
   */
  #completers: readonly CallInterceptor[] = [];
  #deliverers: readonly CallInterceptor[] = [];
  /** Client requests received and not yet answered (or dropped): see `Router.callsInFlight`. */
  #inFlight = 0;
  /** Who waits for `#inFlight` to reach 0 (`whenNone`). */
  #idleWaiters: (() => void)[] = [];

  constructor(options: CallFinisherOptions) {
    this.#o = options;
  }

  /** Adds an interceptor's `complete` and `delivered`, if it has them, after those already added. */
  add(interceptor: CallInterceptor): void {
    if (interceptor.complete) this.#completers = [...this.#completers, interceptor];
    if (interceptor.delivered) this.#deliverers = [...this.#deliverers, interceptor];
  }

  /** A client request arrived: it is in flight until `ended`. */
  started(): void {
    this.#inFlight++;
  }

  /** Client requests in flight (see `Router.callsInFlight`). */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Settles once no client request is in flight (at once if none is). Sets no timer. */
  whenNone(): Promise<void> {
    if (this.#inFlight === 0) return Promise.resolve();
    return new Promise<void>((resolve) => this.#idleWaiters.push(resolve));
  }

  /**
   * A client request got its answer (`response`, as sent), or will never get one (undefined): it
   * is no longer in flight.
   */
  ended(call: ClientCall, response: JsonRpcResponse | undefined): void {
    // Once per call, whichever way it ends (an answer, a drop, or a failure of both).
    if (call.ended) return;
    call.ended = true;
    observeCallEnd(this.#o.observations, call, response);
    this.#inFlight--;
    if (this.#inFlight > 0 || this.#idleWaiters.length === 0) return;
    for (const resolve of this.#idleWaiters.splice(0)) resolve();
  }

  /**
   * The one way a client request ends. The interceptors' `complete` see the response (and may
   * replace or hold it); then it is delivered, unless the client no longer wants it (`deliver`
   * false: cancelled, or its session ended). Idempotent: only the first call counts.
   */
  finish(
    call: ClientCall,
    payload: { result: unknown } | { error: JsonRpcErrorObject },
    options: FinishOptions = {},
  ): void {
    if (call.done) return;
    const { derivedFrom = NONE, deliver = true, upstream } = options;
    call.done = true;
    call.session.release(call);
    const response = { jsonrpc: '2.0', id: call.request.id, ...payload } as JsonRpcResponse;
    const ending: Ending = {
      call,
      derivedFrom,
      deliver,
      upstream,
      completers: this.#completers,
      deliverers: this.#deliverers,
      outcome: { delivered: deliver && !call.session.closed },
    };
    if (ending.completers.length === 0) this.#sendResponse(ending, response);
    else this.#complete(ending, response, 0);
  }

  /**
   * Runs the interceptors' `complete` in order from `index`, then delivers. Completions answered
   * synchronously go on in the same turn; one that answers with a promise holds the response
   * until it settles.
   */
  #complete(ending: Ending, response: JsonRpcResponse, index: number): void {
    const { call, completers, outcome } = ending;
    const info = callInfoOf(call);
    let current = response;
    const ranThrough = runInterceptors<JsonRpcResponse | undefined, CallInterceptor>(
      completers,
      index,
      (interceptor) => (interceptor as Completer).complete(info, current, outcome),
      (next) => {
        if (next !== undefined) current = next;
        return true;
      },
      (next, interceptor, i) => {
        const held = current;
        next.then(
          (replaced) => this.#settle(ending, () => this.#complete(ending, replaced ?? held, i + 1)),
          (error: unknown) =>
            this.#settle(ending, () => {
              this.#o.logger.error(
                { interceptor: interceptor.name, err: String(error) },
                'an interceptor failed to complete a call',
              );
              this.#complete(
                ending,
                {
                  jsonrpc: '2.0',
                  id: call.request.id,
                  error: gatewayError(
                    SbErrorCode.Internal,
                    'the gateway failed while completing this request',
                  ),
                },
                i + 1,
              );
            }),
        );
      },
    );
    if (ranThrough) this.#sendResponse(ending, current);
  }

  /**
   * A continuation of a call that has already ended (its interceptors' `complete` settling):
   * whatever it throws is logged and counted, and the client still gets an answer under its id.
   */
  #settle(ending: Ending, step: () => void): void {
    try {
      step();
    } catch (error) {
      this.#o.metrics.inc('request_failures_total', { stage: 'complete' });
      this.#o.logger.error(
        { method: ending.call.request.method, err: errorText(error) },
        'the gateway failed while completing a request; it is answered with an error',
      );
      this.#sendResponse(ending, {
        jsonrpc: '2.0',
        id: ending.call.request.id,
        error: gatewayError(SbErrorCode.Internal, 'the gateway failed while completing this request'),
      });
    }
  }

  /**
   * Delivers a call's final response, unless the client no longer wants it. A response that
   * cannot be serialised (nothing from a peer can be too deep, but a local answer or an
   * interceptor's replacement could hold anything) is replaced by an error under the same id.
   */
  #sendResponse(ending: Ending, chosen: JsonRpcResponse): void {
    const { call, upstream } = ending;
    if (!ending.deliver || call.session.closed) {
      this.ended(call, undefined);
      if (!call.session.closed) this.#dropped(call);
      this.#delivered(ending, undefined);
      return;
    }
    let response = chosen;
    let json: string;
    let resultAt: number | undefined;
    try {
      json = JSON.stringify(response);
      // Where the result is in the delivered text, when someone reads it: the ledger hashes that
      // slice instead of serialising the result again, the trace digests it without parsing.
      resultAt =
        'result' in response && (ending.deliverers.length > 0 || this.#o.taps.wants(response))
          ? resultTextOffset(json, response)
          : undefined;
    } catch (error) {
      this.#o.metrics.inc('request_failures_total', { stage: 'serialise' });
      this.#o.logger.error(
        { method: call.request.method, err: errorText(error) },
        'a response could not be serialised; the client gets an error in its place',
      );
      response = {
        jsonrpc: '2.0',
        id: call.request.id,
        error: gatewayError(
          SbErrorCode.Internal,
          'the gateway could not serialise the response to this request',
        ),
      };
      json = JSON.stringify(response);
      resultAt = undefined;
    }
    this.#o.deliver(
      call.session,
      response,
      { kind: 'response', request: call.request.id },
      {
        id: newEnvelopeId(),
        correlation: [call.traceId, ...ending.derivedFrom],
        context: call.context,
        receivedAt: call.receivedAt,
        ...(upstream === undefined ? {} : { upstream }),
        ...(resultAt === undefined
          ? {}
          : { resultAt, resultIsError: isErrorResult((response as { result: unknown }).result) }),
      },
      json,
    );
    this.ended(call, response);
    // A slice of the delivered text, not a copy.
    if (ending.deliverers.length > 0)
      this.#delivered(ending, resultAt === undefined ? undefined : json.slice(resultAt, -1));
  }

  /** Tells the session's transport that nothing will be sent for this call (`DownstreamPort.dropped`). */
  #dropped(call: ClientCall): void {
    try {
      call.session.port.dropped?.(call.request.id);
    } catch (error) {
      this.#o.metrics.inc('delivery_errors_total');
      this.#o.logger.error(
        { session: call.session.key, err: errorText(error) },
        'a downstream transport failed to let go of a cancelled request',
      );
    }
  }

  /** Runs the interceptors' `delivered` (see `CallInterceptor.delivered`). */
  #delivered(ending: Ending, resultText: string | undefined): void {
    if (ending.deliverers.length === 0) return;
    const info = callInfoOf(ending.call);
    for (const interceptor of ending.deliverers) {
      try {
        interceptor.delivered?.(info, resultText);
      } catch (error) {
        this.#o.logger.error(
          { interceptor: interceptor.name, err: String(error) },
          'an interceptor failed after a call was answered',
        );
      }
    }
  }
}
