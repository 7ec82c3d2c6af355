/**
 * The gateway's own stdin/stdout as the downstream of one client (the stdio gateway). Reads
 * newline-delimited JSON-RPC, answers malformed input itself where an id is readable, hands valid
 * messages to `onmessage`, and writes what the router sends. A request carrying `_meta` members of
 * the gateway's namespace is refused, a notification or response loses them (`client-meta.ts`). A
 * batch (2025-03-26 only) is answered with one batch of responses once all of its requests are
 * answered: one answer per request, the refusals of ids already in flight or repeated in it
 * included (`batch-plan.ts`). A message nested deeper than `maxJsonDepth` is refused with its id.
 *
 * Backpressure, not loss: stdout is bounded (`maxBufferedBytes`, `stream-bound.ts`). A client that
 * stops reading its pipe cannot be cut and resumed as an HTTP client can (a pipe has no
 * `Last-Event-ID`), and dropping messages would break the session, so while stdout is behind the
 * gateway stops reading what feeds it: the client's own stdin (`inputGate`: the gateway answers
 * some input itself) and the server's stdout (`producers`), so the server blocks on its pipe as it
 * would without the gateway in between. Nothing is dropped; what is buffered is bounded by the
 * limit plus what was already read (one chunk, and answers to calls in flight). Each pause is
 * counted (`stdio_output_paused_total`); the first is logged as a warning, later ones at debug.
 */
import type { Readable, Writable } from 'node:stream';
import { planPayload } from '../../core/batch-plan.js';
import { type InboundItem, readInbound } from '../../core/inbound.js';
import type { Delivery, DownstreamPort } from '../../core/ports.js';
import type { Logger } from '../../observe/logger.js';
import type { Metrics } from '../../observe/metrics.js';
import {
  idKey,
  type JsonRpcMessage,
  type JsonRpcResponse,
  type RequestId,
} from '../../protocol/jsonrpc/types.js';
import { allowsBatch } from '../../protocol/mcp/revisions.js';
import { screenClientPayload } from '../client-meta.js';
import { FlowGate } from '../flow-gate.js';
import { judgeOversized } from '../oversized.js';
import { DEFAULT_MAX_BUFFERED_BYTES, StreamBound } from '../stream-bound.js';
import { LineDecoder } from './line-decoder.js';

/** The client's pipes and what the session needs of the gateway. */
export interface StdioDownstreamOptions {
  /** What the client writes (the gateway's stdin). */
  readonly input: Readable;
  /** Where the client reads (the gateway's stdout). */
  readonly output: Writable;
  /** Longest line taken as a message; a longer one is dropped (`oversized.ts`), its id answered. */
  readonly maxMessageBytes: number;
  /** Deepest nesting accepted in one message; default `DEFAULT_MAX_JSON_DEPTH`. */
  readonly maxJsonDepth?: number;
  /** Whether a request of the client's with this id is still in flight (the router knows). */
  readonly inFlight?: (id: RequestId) => boolean;
  /** Where failures to read and write, and pauses, are logged. */
  readonly logger: Logger;
  /** Where malformed input, delivery errors and backpressure are counted. */
  readonly metrics: Metrics;
  /** The session's negotiated revision, which decides whether batches are allowed. */
  readonly revision: () => string;
  /** Each message for the router (`raw`: its line, when it came alone), in the order read. */
  readonly onmessage: (message: JsonRpcMessage, raw?: string) => void;
  /** Once, when stdin ends, closes or fails: the client is gone. */
  readonly onend: () => void;
  /** Unsent bytes stdout may hold before its sources pause. Default `DEFAULT_MAX_BUFFERED_BYTES`. */
  readonly maxBufferedBytes?: number;
  /**
   * stdin is read only while this is open. Held closed (as `stdout`) while stdout is behind, and
   * by whoever else shares it (the server's stdin, when it is behind). Default: a gate of its own.
   */
  readonly inputGate?: FlowGate;
  /** Other sources of stdout, held closed (as `stdout`) while it is behind: the server's stdout. */
  readonly producers?: readonly FlowGate[];
}

/** The name stdout holds gates under. */
const STDOUT = 'stdout';

interface BatchGroup {
  readonly waiting: Set<string>;
  readonly responses: JsonRpcResponse[];
}

/**
 * The `DownstreamPort` of the one client of the stdio gateway: messages are lines on its stdin and
 * stdout; a batch's responses go back as one batch, once all of them are in.
 */
export class StdioDownstream implements DownstreamPort {
  readonly #o: StdioDownstreamOptions;
  readonly #decoder: LineDecoder;
  /** Pending batches by the id key of each request still unanswered in them. */
  readonly #batches = new Map<string, BatchGroup>();
  readonly #bound: StreamBound;
  readonly #input: FlowGate;
  /** The gates stdout holds while it is behind: the input and the other producers. */
  readonly #gates: readonly FlowGate[];
  #pausesLogged = 0;
  #ended = false;

  /** A port on `options`' pipes; stdout errors are caught from now on, stdin is read from `start()`. */
  constructor(options: StdioDownstreamOptions) {
    this.#o = options;
    this.#bound = new StreamBound(options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES);
    this.#input = options.inputGate ?? new FlowGate();
    this.#gates = [this.#input, ...(options.producers ?? [])];
    this.#decoder = new LineDecoder(
      { line: (text) => this.#line(text), oversized: (head, bytes) => this.#oversized(head, bytes) },
      { maxBytes: options.maxMessageBytes },
    );
    // From the start, not in `start()`: the router may send before stdin is read (the stdio gateway
    // starts its upstream in between), and an EPIPE nobody listens for would crash the gateway.
    options.output.on('error', (error) => {
      // The client went away (EPIPE): nothing more can be delivered.
      this.#o.metrics.inc('delivery_errors_total', { transport: 'stdio' });
      this.#o.logger.debug({ err: error.message }, 'writing stdout failed');
    });
  }

  /** Starts reading stdin (while the input gate is open) and watching for its end. */
  start(): void {
    const input = this.#o.input;
    input.on('data', (chunk: Buffer | string) =>
      this.#decoder.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk),
    );
    this.#input.watch((open) => (open ? input.resume() : input.pause()));
    if (!this.#input.open) input.pause();
    input.once('end', () => this.#end());
    input.once('close', () => this.#end());
    input.on('error', (error) => {
      this.#o.logger.warn({ err: error.message }, 'reading stdin failed');
      this.#end();
    });
  }

  /**
   * Writes `json` as a line on stdout; a response to a request of a pending batch is held until the
   * batch is complete, then the batch's responses go as one array. Never throws.
   */
  send(json: string, message: JsonRpcMessage, delivery: Delivery): void {
    if (delivery.kind === 'response' && this.#batches.size > 0) {
      const key = idKey(delivery.request);
      const group = this.#batches.get(key);
      if (group) {
        this.#batches.delete(key);
        group.waiting.delete(key);
        group.responses.push(message as JsonRpcResponse);
        if (group.waiting.size === 0) this.#write(JSON.stringify(group.responses));
        return;
      }
    }
    this.#write(json);
  }

  /**
   * The client cancelled a request, so no response will come for it: a batch waiting for it is
   * answered without it (nothing at all when it held only cancelled requests, as JSON-RPC answers
   * a batch of notifications).
   */
  dropped(request: RequestId): void {
    const key = idKey(request);
    const group = this.#batches.get(key);
    if (!group) return;
    this.#batches.delete(key);
    group.waiting.delete(key);
    if (group.waiting.size === 0 && group.responses.length > 0) this.#write(JSON.stringify(group.responses));
  }

  #write(json: string): void {
    const output = this.#o.output;
    if (output.writableEnded || output.destroyed) {
      this.#o.metrics.inc('delivery_errors_total', { transport: 'stdio' });
      return;
    }
    output.write(`${json}\n`);
    const paused = this.#input.isHeldBy(STDOUT);
    if (!this.#bound.holdWhileBehind(output, this.#gates, STDOUT) || paused) return;
    this.#o.metrics.inc('stdio_output_paused_total');
    const fields = { unsent: this.#bound.unsent(output), limit: this.#bound.maxBufferedBytes };
    if (this.#pausesLogged++ === 0)
      this.#o.logger.warn(
        fields,
        'the client is not reading stdout: its input and the server’s output wait until it catches up (logged once; later pauses at debug)',
      );
    else this.#o.logger.debug(fields, 'stdout behind: pausing the client’s input and the server’s output');
  }

  #line(text: string): void {
    const revision = this.#o.revision();
    // A client's members of the gateway's `_meta` namespace: its request refused, else removed.
    const payload = screenClientPayload(
      readInbound(text, {
        allowBatch: allowsBatch(revision),
        revision,
        ...(this.#o.maxJsonDepth === undefined ? {} : { maxDepth: this.#o.maxJsonDepth }),
      }),
      this.#o.metrics,
      'stdio',
    );
    if (payload.error) {
      this.#o.metrics.inc('malformed_messages_total', { side: 'client', transport: 'stdio' });
      // A batch refused as a whole still owes each of its requests an answer: stdio has no status
      // line to say "refused", and a client waits for every id it sent.
      const refusals = payload.refusals ?? [];
      if (refusals.length > 0) this.#write(JSON.stringify(refusals));
      this.#o.logger.warn(
        { error: payload.error.message, answered: refusals.length },
        refusals.length > 0
          ? 'unusable batch from the client; each of its requests answered with the error'
          : 'unusable input from the client; dropped',
      );
      return;
    }
    for (const item of payload.items)
      if (item.kind !== 'message')
        this.#o.metrics.inc('malformed_messages_total', { side: 'client', transport: 'stdio' });
    // Ids in flight are the router's, and those of batch answers not written yet.
    const inFlight = this.#o.inFlight;
    const plan = planPayload(
      payload.items,
      payload.batch,
      (id) => this.#batches.has(idKey(id)) || (inFlight?.(id) ?? false),
    );
    if (plan.duplicates > 0)
      this.#o.metrics.inc('duplicate_request_ids_total', { transport: 'stdio' }, plan.duplicates);
    for (const item of plan.dropped)
      this.#o.logger.warn(
        { error: item.error.message },
        'invalid message from the client without a readable id; dropped',
      );
    if (!payload.batch) {
      for (const answer of plan.answers) this.#write(JSON.stringify(answer));
    } else if (plan.awaited.length === 0) {
      if (plan.answers.length > 0) this.#write(JSON.stringify(plan.answers));
    } else {
      // Registered before anything goes to the router, whose answers may come at once.
      const group: BatchGroup = { waiting: new Set(), responses: [...plan.answers] };
      for (const id of plan.awaited) {
        const key = idKey(id);
        group.waiting.add(key);
        this.#batches.set(key, group);
      }
    }
    for (const item of plan.dispatch) this.#dispatch(item);
  }

  #dispatch(item: InboundItem): void {
    if (item.kind === 'message') this.#o.onmessage(item.message, item.raw);
    else if (item.kind === 'forward-error') this.#o.onmessage(item.response);
  }

  #oversized(head: string, bytes: number): void {
    this.#o.metrics.inc('oversized_messages_total', { side: 'client', transport: 'stdio' });
    const verdict = judgeOversized(head, bytes, this.#o.maxMessageBytes);
    this.#o.logger.warn(
      { bytes, limit: this.#o.maxMessageBytes, kind: verdict.kind },
      'client message too large; dropped',
    );
    if (verdict.kind === 'request') this.#write(JSON.stringify(verdict.reply));
    else if (verdict.kind === 'response') this.#o.onmessage(verdict.replacement);
  }

  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#decoder.end();
    this.#o.onend();
  }
}
