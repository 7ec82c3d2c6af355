/**
 * The graceful end of a gateway, shared by `serve` and `stdio`: the router refuses new requests,
 * the calls in flight get up to `graceMs` to finish and be answered normally, and whatever is left
 * is answered with `SB_SHUTTING_DOWN` under its own id (and cancelled upstream), so no client is
 * left waiting for its own timeout. The transports stop accepting before this runs; the gateway
 * closes its upstreams, trace and ledger after it.
 */
import { DEFAULTS } from '../config/defaults.js';
import type { Router } from '../core/router.js';
import { SbErrorCode } from '../errors/switchboard-error.js';
import { gatewayError } from '../errors/to-jsonrpc-error.js';
import type { Logger } from '../observe/logger.js';
import type { Metrics } from '../observe/metrics.js';

/** How long `server.drainTimeout` / `--drain-timeout` is unless configured. */
export const DEFAULT_DRAIN_TIMEOUT_MS = DEFAULTS.server.drainTimeoutMs;

/**
 * After the calls left were answered with an error, how long their answers may take to go out (an
 * audit record of each is made durable first): a bound, so a stuck ledger cannot hold the exit.
 */
const FLUSH_MS = 2_000;

export interface DrainOptions {
  /** How long calls in flight may take to finish (0: answer them at once). */
  readonly graceMs: number;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

export interface DrainOutcome {
  /** Calls in flight when the drain began. */
  readonly inFlight: number;
  /** Of those, and of any that arrived meanwhile, how many were ended with `SB_SHUTTING_DOWN`. */
  readonly ended: number;
}

/** Resolves with true when `promise` settles within `ms`, false otherwise; leaves no timer behind. */
function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    promise.then(
      () => {
        clearTimeout(timer);
        resolve(true);
      },
      () => {
        clearTimeout(timer);
        resolve(true);
      },
    );
  });
}

/** Drains `router` (see the file comment). Never rejects. */
export async function drainCalls(router: Router, options: DrainOptions): Promise<DrainOutcome> {
  const { logger, metrics } = options;
  router.beginDrain();
  const inFlight = router.callsInFlight;
  if (inFlight === 0) return { inFlight, ended: 0 };
  logger.info({ calls: inFlight, graceMs: options.graceMs }, 'draining: waiting for the calls in flight');
  if (options.graceMs > 0 && (await within(router.whenNoCallsInFlight(), options.graceMs))) {
    logger.info({ calls: inFlight }, 'drained: every call in flight finished');
    return { inFlight, ended: 0 };
  }
  const ended = router.endCallsInFlight(
    gatewayError(
      SbErrorCode.ShuttingDown,
      `the gateway shut down before this request finished (it waited ${options.graceMs} ms); the request was cancelled upstream`,
    ),
    'the gateway is shutting down',
  );
  metrics.inc('drain_ended_total', undefined, ended);
  logger.warn(
    { ended, graceMs: options.graceMs },
    'drain: calls still in flight were answered with an error',
  );
  if (!(await within(router.whenNoCallsInFlight(), FLUSH_MS)))
    logger.warn(
      { left: router.callsInFlight },
      'drain: some answers were still held (audit records) at exit',
    );
  return { inFlight, ended };
}
