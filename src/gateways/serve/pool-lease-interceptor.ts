/**
 * Gives a pooled child back when the client call that held it ends (`UpstreamPool.release`). The
 * router ends every call once, through its interceptors' `complete` (answered, refused, failed,
 * timed out, cancelled, cut off by its session's end), so a hold taken while routing the call
 * (`ServeResolver`, `holdKey`) is always released, and only then: every call in flight on a child
 * belongs to the one session holding it.
 *
 * A call whose answer the client will not get (cancelled, or its session ended) or that timed out
 * may still be running in the server, which could ask its client something later; its child is
 * released as tainted and retired, never handed to another session.
 */
import type { CallInfo, CallInterceptor, CallOutcome } from '../../core/router.js';
import { JsonRpcCode } from '../../protocol/jsonrpc/codes.js';
import type { JsonRpcResponse } from '../../protocol/jsonrpc/types.js';
import { holdKey } from './upstream-pool.js';

/** What the interceptor needs of the upstream manager. */
export interface PoolReleaser {
  release(session: string, hold: string, tainted: boolean): void;
}

export class PoolLeaseInterceptor implements CallInterceptor {
  readonly name = 'pool-lease';
  readonly #pools: PoolReleaser;

  constructor(pools: PoolReleaser) {
    this.#pools = pools;
  }

  complete(call: CallInfo, response: JsonRpcResponse, outcome: CallOutcome): undefined {
    const timedOut = 'error' in response && response.error.code === JsonRpcCode.RequestTimeout;
    this.#pools.release(
      call.session.key,
      holdKey(call.session.key, call.request.id),
      !outcome.delivered || timedOut,
    );
    return undefined;
  }
}
