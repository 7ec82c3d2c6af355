/**
 * An upstream MCP server run as a child process and spoken to over its stdin/stdout.
 *
 * - The child gets an explicit environment (see `child-env.ts`) and its own process group, so that
 *   shutdown reaches the whole tree (`npx` wrappers included).
 * - stdout is newline-delimited JSON-RPC with a maximum message size; an oversized message never
 *   kills the connection (see `oversized.ts`).
 * - stderr is the server's log: each line goes to the gateway's log, never treated as an error.
 * - `close()` follows the MCP shutdown sequence: close stdin, wait, SIGTERM, wait, SIGKILL.
 * - `onclose` fires once, as soon as the child has exited and its stdout is drained (or 200 ms
 *   after the exit, when something else holds stdout open); nothing is delivered after it. A
 *   transport closed before `start()` reports its close too, and never spawns.
 * - A child that was sent `initialize` speaks a session-based revision: it gets messages as a 2025
 *   client sends them, without a 2026-07-28 client's envelope members in `_meta`. No child ever gets
 *   the gateway's own `switchboard.dev/` members.
 * - Its stdin is bounded (`maxStdinBufferBytes`, `stream-bound.ts`): a child that stops reading
 *   does not make the gateway queue without end. With a `stdinGate` (the stdio gateway, one client)
 *   the gate is held closed while the child is behind, and the client's input is not read until
 *   it catches up; without one (`serve`, many clients) requests to it are refused with -32007
 *   until then. Either way it is counted (`upstream_stdin_backpressure_total`) and logged.
 * - With a `stdoutGate`, its stdout is read only while the gate is open: when the gateway's client
 *   cannot take more, the child blocks on its own pipe instead of the gateway buffering for it.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import type { InboundMeta, UpstreamClose, UpstreamTransport } from '../../core/ports.js';
import type { StdioTransportContext } from '../../envelope/message-context.js';
import { SbErrorCode, SwitchboardError } from '../../errors/switchboard-error.js';
import { gatewayError } from '../../errors/to-jsonrpc-error.js';
import type { Logger } from '../../observe/logger.js';
import type { Metrics } from '../../observe/metrics.js';
import type { JsonRpcErrorObject, JsonRpcMessage, JsonRpcRequest } from '../../protocol/jsonrpc/types.js';
import { legacyPeerRefusal } from '../../protocol/mcp/legacy-peer-refusal.js';
import { isGatewayMetaKey, toLegacyWire, type Wire, wireWithout } from '../../protocol/mcp/reserved-meta.js';
import type { FlowGate } from '../flow-gate.js';
import { judgeOversized } from '../oversized.js';
import { DEFAULT_MAX_BUFFERED_BYTES, StreamBound } from '../stream-bound.js';
import { LineDecoder } from './line-decoder.js';

/** What to run and how to talk to it. */
export interface ChildProcessOptions {
  /** The upstream's configured name, in logs, counters and errors. */
  readonly name: string;
  /** The program to spawn (no shell). */
  readonly command: string;
  /** Its arguments. */
  readonly args: readonly string[];
  /** Its working directory; the gateway's when left out. */
  readonly cwd?: string;
  /** The complete environment of the child (build it with `childEnvironment`). */
  readonly env: Readonly<Record<string, string>>;
  /** Longest stdout line taken as a message; a longer one is dropped (`oversized.ts`). */
  readonly maxMessageBytes: number;
  /** Where the child's stderr lines and the transport's own events are logged. */
  readonly logger: Logger;
  /** Where write failures and stdin backpressure are counted. */
  readonly metrics: Metrics;
  /** Milliseconds between the steps of the shutdown sequence (default 2000, as the MCP SDK). */
  readonly shutdownGraceMs?: number;
  /** Longest stderr line kept in the log; longer lines are cut. */
  readonly maxStderrLine?: number;
  /**
   * Bytes written to the child's stdin that it has not read, beyond which it is behind (see the
   * module comment). Default `DEFAULT_MAX_BUFFERED_BYTES`.
   */
  readonly maxStdinBufferBytes?: number;
  /** Held closed while the child's stdin is behind; without it, requests are refused meanwhile. */
  readonly stdinGate?: FlowGate;
  /** The child's stdout is read only while this is open. */
  readonly stdoutGate?: FlowGate;
}

const STDERR_LINE_LIMIT = 8192;

/** Numbers the transports of a process, so that each holds a gate under a name of its own. */
let transports = 0;

/** The `UpstreamTransport` of one child process (see the module comment); one child per `start()`. */
export class ChildProcessTransport implements UpstreamTransport {
  /** Each non-blank line the child writes to stdout, until the close (`UpstreamTransport.onmessage`). */
  onmessage?: (text: string, meta: InboundMeta) => void;
  /** Once: the child exited (stdout drained), could not be spawned, or was closed before `start()`. */
  onclose?: (close: UpstreamClose) => void;
  /** A failure of the child process that does not (yet) end it. */
  onerror?: (error: Error) => void;

  readonly #options: ChildProcessOptions;
  #child: ChildProcessWithoutNullStreams | undefined;
  #context: StdioTransportContext = { kind: 'stdio' };
  #closed = false;
  #closing: Promise<void> | undefined;
  #exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  #exited: Promise<void> = Promise.resolve();
  /**
   * An `initialize` went to the child: it speaks a session-based revision, so every message gets the
   * 2025 shape (`toLegacyWire`). Until then (a 2026-07-28 child behind the pass-through stdio
   * gateway never gets one) messages go as they are, less the gateway's own `_meta` members.
   */
  #legacy = false;
  readonly #stdinBound: StreamBound;
  /** The child's stdin is behind and it was counted and logged (until it catches up). */
  #stdinBehind = false;
  /** Stops following `stdoutGate`. */
  #unwatch: (() => void) | undefined;
  /**
   * The name this child holds `stdinGate` under: its own, so that a late release by a child that
   * is gone never lets go of its restarted successor's hold.
   */
  readonly #holder: string;

  /** A transport for `options`; nothing is spawned until `start()`. */
  constructor(options: ChildProcessOptions) {
    this.#options = options;
    this.#stdinBound = new StreamBound(options.maxStdinBufferBytes ?? DEFAULT_MAX_BUFFERED_BYTES);
    this.#holder = `upstream-stdin:${options.name}#${++transports}`;
  }

  /** The child's process id, once spawned (undefined before, or when the spawn failed). */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** `{ kind: 'stdio' }`, with the child's `pid` once it is spawned. */
  get transportContext(): StdioTransportContext {
    return this.#context;
  }

  /** Spawns the child; rejects with SB_UPSTREAM_SPAWN when it cannot be started (e.g. ENOENT). */
  start(): Promise<void> {
    const o = this.#options;
    if (this.#closing)
      return Promise.reject(
        new SwitchboardError(
          SbErrorCode.UpstreamSpawnFailed,
          `upstream ${o.name} was closed before it started`,
        ),
      );
    return new Promise<void>((resolve, reject) => {
      let child: ChildProcessWithoutNullStreams;
      try {
        child = spawn(o.command, [...o.args], {
          cwd: o.cwd,
          env: { ...o.env },
          stdio: ['pipe', 'pipe', 'pipe'],
          detached: process.platform !== 'win32',
          windowsHide: true,
        });
      } catch (cause) {
        reject(
          new SwitchboardError(
            SbErrorCode.UpstreamSpawnFailed,
            `cannot start upstream ${o.name}: ${String(cause)}`,
            { cause },
          ),
        );
        return;
      }
      this.#child = child;
      let spawned = false;
      let resolveExit: () => void = () => {};
      this.#exited = new Promise<void>((r) => {
        resolveExit = r;
      });

      child.once('spawn', () => {
        spawned = true;
        this.#context = child.pid === undefined ? { kind: 'stdio' } : { kind: 'stdio', pid: child.pid };
        resolve();
      });
      child.once('error', (error) => {
        if (!spawned) {
          reject(
            new SwitchboardError(
              SbErrorCode.UpstreamSpawnFailed,
              `cannot start upstream ${o.name} (${o.command}): ${error.message}`,
              {
                cause: error,
              },
            ),
          );
          this.#finish({ reason: `spawn failed: ${error.message}`, code: null, signal: null });
          resolveExit();
          return;
        }
        this.onerror?.(error);
      });

      const decoder = new LineDecoder(
        {
          line: (text) => this.#deliver(text),
          oversized: (head, bytes) => this.#oversized(head, bytes),
        },
        { maxBytes: o.maxMessageBytes },
      );
      child.stdout.on('data', (chunk: Buffer) => decoder.push(chunk));
      child.stdout.on('end', () => decoder.end());
      const gate = o.stdoutGate;
      if (gate) {
        // Not read while the gateway's client cannot take more: the child blocks on its pipe.
        this.#unwatch = gate.watch((open) => (open ? child.stdout.resume() : child.stdout.pause()));
        if (!gate.open) child.stdout.pause();
      }

      const stderr = new LineDecoder(
        {
          line: (text) => o.logger.info({ upstream: o.name, stream: 'stderr' }, text),
          oversized: (head, bytes) =>
            o.logger.info({ upstream: o.name, stream: 'stderr', truncatedFrom: bytes }, head),
        },
        { maxBytes: o.maxStderrLine ?? STDERR_LINE_LIMIT, headBytes: o.maxStderrLine ?? STDERR_LINE_LIMIT },
      );
      child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
      child.stderr.on('end', () => stderr.end());

      // EPIPE and friends on stdin surface as an exit soon after; never crash on them.
      child.stdin.on('error', (error) => {
        o.metrics.inc('upstream_write_errors_total', { upstream: o.name });
        o.logger.debug({ upstream: o.name, err: error.message }, 'write to upstream stdin failed');
      });

      child.once('exit', (code, signal) => {
        this.#exit = { code, signal };
        // Let stdout drain, but never wait long: in-flight requests must fail promptly.
        const timer = setTimeout(() => this.#finishFromExit(), 200);
        child.stdout.once('close', () => {
          clearTimeout(timer);
          this.#finishFromExit();
        });
        if (child.stdout.closed) {
          clearTimeout(timer);
          this.#finishFromExit();
        }
        resolveExit();
      });
    });
  }

  /**
   * A request the child cannot take now: without a `stdinGate`, any while its stdin is behind
   * (-32007, `SB_LIMIT_EXCEEDED`: nothing was sent, the client may retry); and for a legacy child
   * a 2026-07-28 `requestState` it cannot resume (see `legacyPeerRefusal`).
   */
  refuse(request: JsonRpcRequest): JsonRpcErrorObject | undefined {
    const o = this.#options;
    const stdin = this.#child?.stdin;
    if (o.stdinGate === undefined && stdin !== undefined && this.#stdinBound.isBehind(stdin)) {
      const unsent = this.#stdinBound.unsent(stdin);
      const limit = this.#stdinBound.maxBufferedBytes;
      return gatewayError(
        SbErrorCode.LimitExceeded,
        `upstream ${o.name} is not reading its input (${unsent} bytes wait for it, limit ${limit}): the request was not sent; try again later`,
        { upstream: o.name, unsent, limit },
      );
    }
    return this.#legacy ? legacyPeerRefusal(request, o.name) : undefined;
  }

  /**
   * Writes `message` as one line to the child's stdin, in the shape its revision takes (module
   * comment); returns what was written when that differs from `json`. Never throws: with no child,
   * or stdin closed, it is counted (`upstream_write_errors_total`) and nothing is written.
   */
  send(json: string, message: JsonRpcMessage): Wire | undefined {
    const child = this.#child;
    if (!child || this.#closed || !child.stdin.writable) {
      this.#options.metrics.inc('upstream_write_errors_total', { upstream: this.#options.name });
      return undefined;
    }
    if (!this.#legacy && 'id' in message && 'method' in message && message.method === 'initialize')
      this.#legacy = true;
    const wire = this.#legacy ? toLegacyWire(json, message) : wireWithout(json, message, isGatewayMetaKey);
    child.stdin.write(`${wire.json}\n`);
    this.#checkStdin(child);
    return wire.json === json ? undefined : wire;
  }

  /**
   * After a write to the child's stdin: when the child is behind, holds `stdinGate` closed until it
   * has read (or refuses requests meanwhile, see `refuse`), and counts and logs it once.
   */
  #checkStdin(child: ChildProcessWithoutNullStreams): void {
    const o = this.#options;
    const gate = o.stdinGate;
    const behind = gate
      ? this.#stdinBound.holdWhileBehind(child.stdin, [gate], this.#holder)
      : this.#stdinBound.isBehind(child.stdin);
    if (!behind || this.#stdinBehind) return;
    this.#stdinBehind = true;
    o.metrics.inc('upstream_stdin_backpressure_total', { upstream: o.name });
    o.logger.warn(
      {
        upstream: o.name,
        unsent: this.#stdinBound.unsent(child.stdin),
        limit: this.#stdinBound.maxBufferedBytes,
      },
      gate
        ? 'the upstream is not reading its stdin: the client is not read until it catches up'
        : 'the upstream is not reading its stdin: requests to it are refused until it catches up',
    );
    this.#stdinBound.whenCaughtUp(child.stdin, () => {
      this.#stdinBehind = false;
    });
  }

  /** The MCP stdio shutdown sequence. Idempotent; resolves when the child is gone. */
  close(): Promise<void> {
    if (this.#closing) return this.#closing;
    this.#closing = this.#shutdown();
    return this.#closing;
  }

  async #shutdown(): Promise<void> {
    const child = this.#child;
    // Never started: nothing to stop, but the close is still reported (once, as always).
    if (!child) this.#finish({ reason: 'closed', code: null, signal: null });
    if (!child || this.#exit) return;
    const grace = this.#options.shutdownGraceMs ?? 2000;
    child.stdin.end();
    if (await this.#exitedWithin(grace)) return;
    this.#signal('SIGTERM');
    if (await this.#exitedWithin(grace)) return;
    this.#signal('SIGKILL');
    await this.#exitedWithin(grace);
  }

  #exitedWithin(ms: number): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      if (this.#exit) {
        resolve(true);
        return;
      }
      const timer = setTimeout(() => resolve(false), ms);
      void this.#exited.then(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  #signal(signal: NodeJS.Signals): void {
    const pid = this.#child?.pid;
    if (pid === undefined) return;
    try {
      // The whole process group: the server and anything it started.
      if (process.platform !== 'win32') process.kill(-pid, signal);
      else this.#child?.kill(signal);
    } catch {
      try {
        this.#child?.kill(signal);
      } catch {
        // Already gone.
      }
    }
  }

  #oversized(head: string, bytes: number): void {
    const o = this.#options;
    o.metrics.inc('oversized_messages_total', { side: 'upstream', upstream: o.name });
    const verdict = judgeOversized(head, bytes, o.maxMessageBytes);
    o.logger.warn(
      { upstream: o.name, bytes, limit: o.maxMessageBytes, kind: verdict.kind },
      'upstream message too large; dropped',
    );
    if (verdict.kind === 'response') this.#deliver(JSON.stringify(verdict.replacement));
    else if (verdict.kind === 'request') this.send(JSON.stringify(verdict.reply), verdict.reply);
  }

  /**
   * Hands a line of the child's stdout to the owner, unless `onclose` was called: stdout may outlive
   * the child (a grandchild holding it open and writing on), and nothing follows `onclose`.
   */
  #deliver(text: string): void {
    if (this.#closed) return;
    this.onmessage?.(text, { transport: this.#context });
  }

  #finishFromExit(): void {
    const exit = this.#exit ?? { code: null, signal: null };
    const reason = exit.signal ? `exited on ${exit.signal}` : `exited with code ${exit.code}`;
    this.#finish({ reason, code: exit.code, signal: exit.signal });
  }

  #finish(close: UpstreamClose): void {
    if (this.#closed) return;
    this.#closed = true;
    // A child that is gone holds nobody back.
    this.#unwatch?.();
    this.#options.stdinGate?.reopen(this.#holder);
    this.onclose?.(close);
  }
}
