/**
 * Plays the client side of a tape against a live server (`switchboard tape check`), through any
 * `UpstreamTransport` (a child process, an HTTP server of either era): the gateway's own upstream
 * transports are the client, so the server is spoken to exactly as the gateway speaks to it.
 *
 * The conversation follows the tape, line by line:
 * - a client request or notification is sent as recorded (its id, params and `_meta` too: the
 *   recorded ids were unique in the session, and a `notifications/cancelled` names them);
 * - at a server answer's line, the checker waits for the live answer to that request before it
 *   goes on, so the live server sees the client's messages in the order and with the overlap the
 *   recording had (two calls sent before either answer stay concurrent);
 * - at a server request's line (sampling, elicitation, roots), it waits for the live server to
 *   have made one of that method;
 * - a server→client request is answered the moment it arrives, with the client's recorded
 *   answer to the next recorded request of the same method (under the live id); a `ping` the
 *   tape has no answer for is answered `{}`, anything else the tape cannot answer gets -32601 and
 *   is reported as unexpected;
 * - each wait ends at `timeoutMs` (the answer is then reported missing) or when the server goes.
 *
 * What it returns is what happened, paired with the tape (`compare-run.ts` judges it); the live
 * log, in order, is what `--update` writes as a new tape.
 */
import { performance } from 'node:perf_hooks';
import type { UpstreamTransport } from '../core/ports.js';
import { isObject } from '../protocol/jsonrpc/json-object.js';
import {
  idKey,
  isNotification,
  isRequest,
  isResponse,
  type JsonRpcMessage,
  type JsonRpcRequest,
  type JsonRpcResponse,
} from '../protocol/jsonrpc/types.js';
import { isModernMetaKey, withoutMetaMembers } from '../protocol/mcp/reserved-meta.js';
import {
  type CheckLine,
  type CheckTape,
  progressTokenOf,
  requestLineOf,
  responseLineOf,
} from '../tape/check/check-tape-view.js';
import type { LiveRun, LiveServerRequest } from '../tape/check/compare-run.js';

export interface TapeCheckerOptions {
  /** Longest wait for each answer or server request, in milliseconds. */
  readonly timeoutMs: number;
}

/** Runs the tape against the server behind `transport` (not started yet); closes it at the end. */
export async function runTapeCheck(
  tape: CheckTape,
  transport: UpstreamTransport,
  options: TapeCheckerOptions,
): Promise<LiveRun> {
  const run = new TapeRun(tape, transport, options);
  return run.run();
}

class TapeRun {
  readonly #tape: CheckTape;
  readonly #transport: UpstreamTransport;
  readonly #options: TapeCheckerOptions;
  readonly #start = performance.now();
  readonly #startedAt = Date.now();
  /** Client requests sent and not answered: live id key → the request's recorded seq. */
  readonly #pending = new Map<string, number>();
  /** Progress tokens sent → the recorded seq of their request. */
  readonly #tokens = new Map<string, number>();
  readonly #answers = new Map<number, JsonRpcResponse>();
  readonly #progress = new Map<number, { count: number; afterAnswer: number }>();
  readonly #serverRequests: LiveServerRequest[] = [];
  /** The recorded server requests, each taken by the first live one of its method. */
  readonly #recordedServerRequests: CheckLine[];
  readonly #taken = new Set<number>();
  readonly #log: { t: number; dir: 'c2s' | 's2c'; message: JsonRpcMessage }[] = [];
  readonly #missing: number[] = [];
  #closed: string | undefined;
  /** The tape holds a 2025 handshake (`initialize`), so its client was session-based. */
  readonly #handshake: boolean;
  /** The tape is played: the close that follows is the checker's own, not the server going away. */
  #done = false;
  #wake: (() => void)[] = [];

  constructor(tape: CheckTape, transport: UpstreamTransport, options: TapeCheckerOptions) {
    this.#tape = tape;
    this.#transport = transport;
    this.#options = options;
    this.#recordedServerRequests = tape.messages.filter((l) => l.dir === 's2c' && isRequest(l.message));
    this.#handshake =
      tape.header.client !== undefined ||
      tape.messages.some(
        (l) => l.dir === 'c2s' && 'method' in l.message && l.message.method === 'initialize',
      );
  }

  async run(): Promise<LiveRun> {
    const t = this.#transport;
    t.onmessage = (text) => this.#receive(text);
    t.onclose = (close) => {
      if (!this.#done) this.#closed ??= close.reason;
      this.#notify();
    };
    t.onerror = () => undefined;
    try {
      await t.start();
    } catch (error) {
      this.#closed ??= `cannot start the server: ${error instanceof Error ? error.message : String(error)}`;
    }
    for (const line of this.#handshakeFirst()) {
      if (this.#closed !== undefined) break;
      await this.#play(line);
    }
    this.#done = true;
    await t.close().catch(() => undefined);
    return {
      answers: this.#answers,
      progress: this.#progress,
      serverRequests: this.#serverRequests,
      missing: this.#missing,
      startedAt: this.#startedAt,
      log: this.#log,
      ...(this.#closed === undefined ? {} : { closed: this.#closed }),
    };
  }

  /**
   * The tape's lines, with the header's client `initialize` first when the tape's own messages
   * start without one (a hand-written or trimmed tape): a session-based server answers nothing
   * before it.
   */
  #handshakeFirst(): readonly CheckLine[] {
    const lines = this.#tape.messages;
    const init = this.#tape.header.client?.initialize;
    const first = lines.find((l) => l.dir === 'c2s');
    if (
      init === undefined ||
      (first !== undefined && 'method' in first.message && first.message.method === 'initialize')
    )
      return lines;
    const request: JsonRpcRequest = {
      jsonrpc: '2.0',
      id: 'tape-check-initialize',
      method: 'initialize',
      params: init,
    };
    return [{ seq: 0, t: 0, dir: 'c2s', message: request }, ...lines];
  }

  async #play(line: CheckLine): Promise<void> {
    const m = line.dir === 'c2s' ? this.#asClientSent(line.message) : line.message;
    if (line.dir === 'c2s') {
      if (isResponse(m)) return; // answered when the live server asks (see the module comment)
      if (isRequest(m)) {
        this.#pending.set(idKey(m.id), line.seq);
        const token = progressTokenOf(m);
        if (token !== undefined) this.#tokens.set(token, line.seq);
      }
      this.#send(m);
      // The handshake the header supplied has no answer line to wait at: wait for it here.
      if (line.seq === 0 && !(await this.#until(() => this.#answers.has(0)))) this.#missing.push(0);
      return;
    }
    if (isResponse(m)) {
      const request = requestLineOf(this.#tape, line);
      if (request === undefined || request.dir !== 'c2s') return;
      if (!(await this.#until(() => this.#answers.has(request.seq)))) this.#missing.push(request.seq);
      return;
    }
    if (isRequest(m)) {
      if (!(await this.#until(() => this.#taken.has(line.seq)))) this.#missing.push(line.seq);
    }
  }

  /**
   * A client message as its client sent it. A tape is the server's view: a session-based client's
   * request to a 2026-07-28 server was recorded with the envelope the gateway's transport added
   * (`io.modelcontextprotocol/protocolVersion`, client info...), and its answer as the transport
   * adapted it back for that client. Sent with the envelope, the transport would take the checker
   * for a 2026-07-28 client and hand back the answer unadapted (`resultType` and all); so in a
   * session with a handshake the envelope members go, and the transport adds them again as it did.
   */
  #asClientSent(message: JsonRpcMessage): JsonRpcMessage {
    if (!this.#handshake || isResponse(message)) return message;
    return withoutMetaMembers(message, isModernMetaKey);
  }

  #send(message: JsonRpcMessage): void {
    this.#log.push({ t: this.#now(), dir: 'c2s', message });
    this.#transport.send(JSON.stringify(message), message);
  }

  #receive(text: string): void {
    let message: JsonRpcMessage;
    try {
      const value: unknown = JSON.parse(text);
      if (!isObject(value)) return;
      message = value as unknown as JsonRpcMessage;
    } catch {
      return;
    }
    this.#log.push({ t: this.#now(), dir: 's2c', message });
    if (isRequest(message)) this.#answerServer(message);
    else if (isResponse(message)) {
      const key = message.id === null ? undefined : idKey(message.id);
      const seq = key === undefined ? undefined : this.#pending.get(key);
      if (key !== undefined && seq !== undefined) {
        this.#pending.delete(key);
        this.#answers.set(seq, message);
      }
    } else if (isNotification(message) && message.method === 'notifications/progress') {
      const token = progressTokenOf(message);
      const seq = token === undefined ? undefined : this.#tokens.get(token);
      if (seq !== undefined) {
        const p = this.#progress.get(seq) ?? { count: 0, afterAnswer: 0 };
        p.count += 1;
        if (this.#answers.has(seq)) p.afterAnswer += 1;
        this.#progress.set(seq, p);
      }
    }
    this.#notify();
  }

  /** Answers a live server request with the client's recorded answer to the next one of its method. */
  #answerServer(live: JsonRpcRequest): void {
    const recorded = this.#recordedServerRequests.find(
      (l) => !this.#taken.has(l.seq) && 'method' in l.message && l.message.method === live.method,
    );
    if (recorded === undefined) {
      if (live.method === 'ping') {
        this.#send({ jsonrpc: '2.0', id: live.id, result: {} });
        return;
      }
      this.#serverRequests.push({ live });
      this.#send({
        jsonrpc: '2.0',
        id: live.id,
        error: { code: -32601, message: `the tape holds no answer to ${live.method}` },
      });
      return;
    }
    this.#taken.add(recorded.seq);
    this.#serverRequests.push({ recorded: recorded.seq, live });
    const answer = responseLineOf(this.#tape, recorded)?.message;
    if (answer === undefined || !isResponse(answer)) {
      this.#send({
        jsonrpc: '2.0',
        id: live.id,
        error: { code: -32603, message: `the tape holds the ${live.method} request but not the answer` },
      });
      return;
    }
    this.#send({ ...answer, id: live.id } as JsonRpcResponse);
  }

  #now(): number {
    return Math.round((performance.now() - this.#start) * 1000) / 1000;
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = [];
    for (const w of wake) w();
  }

  /** Resolves true once `done()` holds, false when the server is gone or the wait times out. */
  #until(done: () => boolean): Promise<boolean> {
    if (done()) return Promise.resolve(true);
    if (this.#closed !== undefined) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), this.#options.timeoutMs);
      const check = (): void => {
        if (done()) {
          clearTimeout(timer);
          resolve(true);
        } else if (this.#closed !== undefined) {
          clearTimeout(timer);
          resolve(false);
        } else this.#wake.push(check);
      };
      this.#wake.push(check);
    });
  }
}
