/**
 * One client's replay: being the recorded server for whoever is connected now. It takes the
 * messages the live client sends (as the gateway forwards them: its own ids and progress tokens)
 * and answers from the script, playing each call's recorded conversation in order:
 *
 * - `initialize` is answered with the recorded server's result, `ping` with `{}`; client
 *   notifications are taken and ignored, except `notifications/cancelled`, which stops the call it
 *   names (no answer follows, as MCP requires);
 * - any other request goes to the matcher (`tape-matcher.ts`); a hit plays the recorded call: the
 *   progress notifications, log lines and server→client requests made during it, then its answer,
 *   each after the recorded gap since the step before it divided by `speed` (0: no waits);
 * - what is played is rewritten for the live client: the answer carries the live request's id,
 *   progress carries the live request's `progressToken` (and is left out when it gave none), a
 *   server→client request gets a fresh id (`tape-1`, `tape-2`…);
 * - after a server→client request the call waits for the client's answer, as the server did; the
 *   answer is accepted whatever it is, compared with the recorded one (the same normalisation as
 *   requests), and a difference is only reported through `warn`;
 * - a miss is answered with `SB_TAPE_NO_MATCH` naming the closest recorded request.
 *
 * Time is the injected `Scheduler`'s, so tests drive it; nothing here touches a socket.
 */

import { SbErrorCode } from '../../errors/switchboard-error.js';
import { gatewayError } from '../../errors/to-jsonrpc-error.js';
import { JsonRpcCode } from '../../protocol/jsonrpc/codes.js';
import type { JsonObject, JsonRpcMessage, JsonRpcRequest, RequestId } from '../../protocol/jsonrpc/types.js';
import { MCP_REVISIONS, MODERN_REVISION, negotiateLegacyRevision } from '../../protocol/mcp/revisions.js';
import { jsonPathDiff } from './json-path-diff.js';
import { noMatchError } from './no-match-error.js';
import { LIST_METHODS, type ReplayScript, type ScriptCall, type ScriptStep } from './replay-script.js';
import { normaliseParams } from './request-key.js';
import { type MatchMode, TapeMatcher } from './tape-matcher.js';

/** Timers, injected so tests control time. */
export interface Scheduler {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

type RealTimer = { readonly timeout: NodeJS.Timeout } | { readonly immediate: NodeJS.Immediate };

/**
 * Node's timers; a wait of 0 is `setImmediate` (a `setTimeout` of 0 waits at least 1 ms, which would
 * be most of a replayed round trip at `--speed 0`).
 */
export const realScheduler: Scheduler = {
  setTimeout: (fn, ms): RealTimer =>
    ms > 0 ? { timeout: setTimeout(fn, ms) } : { immediate: setImmediate(fn) },
  clearTimeout: (handle) => {
    // Each kind to its own clear: Node's clearImmediate given a Timeout would corrupt its queue.
    const timer = handle as RealTimer;
    if ('timeout' in timer) clearTimeout(timer.timeout);
    else clearImmediate(timer.immediate);
  },
};

export interface ReplaySessionOptions {
  readonly script: ReplayScript;
  readonly mode: MatchMode;
  /** Recorded gaps are divided by this; 0 plays everything without waiting. Default 1. */
  readonly speed?: number;
  /** Where the server's messages go (to the gateway, then the client). */
  readonly send: (message: JsonRpcMessage, related?: RequestId) => void;
  /** A difference worth a log line (an approximate match, a client answer unlike the recorded one). */
  readonly warn?: (text: string, data: Record<string, unknown>) => void;
  readonly scheduler?: Scheduler;
}

/** A recorded call being played for one live request. */
interface Playing {
  readonly call: ScriptCall;
  readonly liveId: RequestId;
  readonly progressToken: unknown;
  next: number;
  /** The recorded time the next gap is measured from. */
  since: number;
  timer?: unknown;
  /** The server→client request the call waits on (its live id). */
  waitingOn?: string;
  done: boolean;
}

/** A message's params when they are an object (by name), else an empty object. */
function objectParams(params: JsonObject | readonly unknown[] | undefined): JsonObject {
  return params !== undefined && !Array.isArray(params) ? (params as JsonObject) : {};
}

/**
 * The answer to a live `initialize`: the recorded server's result as it was, except that a tape of
 * a 2026-07-28 server (whose "initialize" the recorder made from its discover result) names the
 * session-era revision the client asked for, or the latest one, since a client that sends
 * `initialize` cannot speak 2026-07-28.
 */
export function initializeAnswer(recorded: JsonObject, requested: unknown): JsonObject {
  if (recorded.protocolVersion !== MODERN_REVISION) return recorded;
  return { ...recorded, protocolVersion: negotiateLegacyRevision(requested, MCP_REVISIONS) };
}

/** Methods answered from the tape any number of times (lists, and a 2026-07-28 server's discover). */
export function isReusable(method: string): boolean {
  return LIST_METHODS.has(method) || method === 'server/discover';
}

export class ReplaySession {
  readonly #o: ReplaySessionOptions;
  readonly #matcher: TapeMatcher;
  readonly #scheduler: Scheduler;
  readonly #speed: number;
  readonly #playing = new Map<RequestId, Playing>();
  readonly #asked = new Map<string, { playing: Playing; step: ScriptStep }>();
  #serverIds = 0;
  #closed = false;

  constructor(options: ReplaySessionOptions) {
    this.#o = options;
    this.#matcher = new TapeMatcher(options.script.requests, options.mode, isReusable);
    this.#scheduler = options.scheduler ?? realScheduler;
    this.#speed = options.speed ?? 1;
  }

  /** How many recorded requests have not been answered yet (for a summary at the end). */
  get remaining(): number {
    return this.#matcher.remaining;
  }

  /** Takes one message from the live client. */
  receive(message: JsonRpcMessage): void {
    if (this.#closed) return;
    if ('method' in message) {
      if ('id' in message) this.#request(message);
      else if (message.method === 'notifications/cancelled')
        this.#cancel(objectParams(message.params).requestId);
      return;
    }
    this.#answer(message);
  }

  /** Stops every call being played; nothing more is sent. */
  close(): void {
    this.#closed = true;
    for (const playing of this.#playing.values()) this.#stop(playing);
    this.#playing.clear();
    this.#asked.clear();
  }

  #request(request: JsonRpcRequest): void {
    if (request.method === 'initialize') {
      const result = initializeAnswer(
        this.#o.script.initialize,
        objectParams(request.params).protocolVersion,
      );
      this.#later(() => this.#o.send({ jsonrpc: '2.0', id: request.id, result }));
      return;
    }
    if (request.method === 'ping') {
      this.#later(() => this.#o.send({ jsonrpc: '2.0', id: request.id, result: {} }));
      return;
    }
    if (
      request.method === 'server/discover' &&
      !this.#o.script.requests.some((r) => r.method === request.method)
    ) {
      // A session-era server knows no discover; the client falls back to initialize.
      this.#later(() =>
        this.#o.send({
          jsonrpc: '2.0',
          id: request.id,
          error: { code: JsonRpcCode.MethodNotFound, message: 'Method not found: server/discover' },
        }),
      );
      return;
    }
    const outcome = this.#matcher.match(request.method, request.params);
    if (outcome.kind === 'miss') {
      const error = noMatchError(request.method, this.#matcher.mode, outcome);
      this.#o.warn?.(error.message, { method: request.method, reason: outcome.reason });
      this.#later(() => this.#o.send({ jsonrpc: '2.0', id: request.id, error }));
      return;
    }
    if (outcome.approximate)
      this.#o.warn?.(
        `tape replay: ${request.method} answered with recorded #${outcome.seq}, whose params differ`,
        {
          differences: outcome.approximate,
        },
      );
    const call = this.#o.script.calls.get(outcome.seq) as ScriptCall;
    const playing: Playing = {
      call,
      liveId: request.id,
      progressToken: (objectParams(request.params)._meta as JsonObject | undefined)?.progressToken,
      next: 0,
      since: call.request.t,
      done: false,
    };
    this.#playing.set(request.id, playing);
    this.#schedule(playing);
  }

  /** Plays the next step of `playing` after its recorded gap. */
  #schedule(playing: Playing): void {
    if (playing.done || playing.waitingOn !== undefined) return;
    const step = playing.call.steps[playing.next];
    const at = step ? step.line.t : (playing.call.response?.t ?? playing.since);
    const gap = this.#speed > 0 ? Math.max(0, at - playing.since) / this.#speed : 0;
    playing.timer = this.#scheduler.setTimeout(() => {
      playing.timer = undefined;
      if (playing.done) return;
      if (step) {
        playing.next++;
        playing.since = step.line.t;
        this.#play(playing, step);
        this.#schedule(playing);
      } else this.#finish(playing);
    }, gap);
  }

  #play(playing: Playing, step: ScriptStep): void {
    const message = step.line.message;
    if (!('method' in message)) return;
    if (message.method === 'notifications/progress') {
      if (playing.progressToken === undefined) return;
      this.#o.send(
        { ...message, params: { ...objectParams(message.params), progressToken: playing.progressToken } },
        playing.liveId,
      );
      return;
    }
    if ('id' in message) {
      const id = `tape-${++this.#serverIds}`;
      this.#asked.set(id, { playing, step });
      playing.waitingOn = id;
      this.#o.send({ ...message, id }, playing.liveId);
      return;
    }
    this.#o.send(message, playing.liveId);
  }

  #finish(playing: Playing): void {
    playing.done = true;
    this.#playing.delete(playing.liveId);
    const recorded = playing.call.response?.message;
    if (recorded && 'result' in recorded) {
      this.#o.send({ jsonrpc: '2.0', id: playing.liveId, result: recorded.result });
      return;
    }
    if (recorded && 'error' in recorded) {
      this.#o.send({ jsonrpc: '2.0', id: playing.liveId, error: recorded.error });
      return;
    }
    this.#o.send({
      jsonrpc: '2.0',
      id: playing.liveId,
      error: gatewayError(
        SbErrorCode.TapeNoMatch,
        `tape replay: the recorded ${playing.call.request.message.method} #${playing.call.request.seq} has no answer on the tape (cancelled, or cut short when it was recorded)`,
        { reason: 'no-answer', seq: playing.call.request.seq },
      ),
    });
  }

  /** The client's answer to a server→client request: accepted, compared, and the call goes on. */
  #answer(message: JsonRpcMessage): void {
    if (!('id' in message) || typeof message.id !== 'string') return;
    const asked = this.#asked.get(message.id);
    if (!asked) return;
    this.#asked.delete(message.id);
    const { playing, step } = asked;
    const recorded = step.answer?.message;
    if (recorded && !('method' in recorded)) {
      const live =
        'result' in message
          ? { result: message.result }
          : { error: 'error' in message ? message.error : null };
      const then = 'result' in recorded ? { result: recorded.result } : { error: recorded.error };
      const differences = jsonPathDiff(normaliseParams(then), normaliseParams(live));
      if (differences.length > 0)
        this.#o.warn?.(
          `tape replay: the client's answer to ${'method' in step.line.message ? step.line.message.method : 'a request'} differs from the recorded one (the recorded answer of the server follows anyway)`,
          { seq: step.line.seq, differences },
        );
    }
    if (playing.waitingOn !== message.id || playing.done) return;
    playing.waitingOn = undefined;
    if (step.answer) playing.since = step.answer.t;
    this.#schedule(playing);
  }

  #cancel(requestId: unknown): void {
    if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
    const playing = this.#playing.get(requestId);
    if (!playing) return;
    this.#stop(playing);
    this.#playing.delete(requestId);
  }

  #stop(playing: Playing): void {
    playing.done = true;
    if (playing.timer !== undefined) this.#scheduler.clearTimeout(playing.timer);
    if (playing.waitingOn !== undefined) this.#asked.delete(playing.waitingOn);
  }

  /** Answers go out in a later turn, never inside the call that handed the request in. */
  #later(fn: () => void): void {
    this.#scheduler.setTimeout(() => {
      if (!this.#closed) fn();
    }, 0);
  }
}
