/**
 * The gateway's own stdin/stdout as the downstream of one client (the stdio gateway). Reads
 * newline-delimited JSON-RPC, answers malformed input itself where an id is readable, hands valid
 * messages to `onmessage`, and writes what the router sends. A request carrying `_meta` members of
 * the gateway's namespace is refused, a notification or response loses them (`client-meta.ts`). A
 * batch (2025-03-26 only) is answered with one batch of responses once all of its requests are
 * answered.
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
import { type InboundItem, readInbound } from '../../core/inbound.js';
import type { Delivery, DownstreamPort } from '../../core/ports.js';
import type { Logger } from '../../observe/logger.js';
import type { Metrics } from '../../observe/metrics.js';
import { idKey, type JsonRpcMessage, type JsonRpcResponse } from '../../protocol/jsonrpc/types.js';
import { allowsBatch } from '../../protocol/mcp/revisions.js';
import { screenClientPayload } from '../client-meta.js';
import { FlowGate } from '../flow-gate.js';
import { judgeOversized } from '../oversized.js';
import { DEFAULT_MAX_BUFFERED_BYTES, StreamBound } from '../stream-bound.js';
import { LineDecoder } from './line-decoder.js';

export interface StdioDownstreamOptions {
  readonly input: Readable;
  readonly output: Writable;
  readonly maxMessageBytes: number;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** The session's negotiated revision, which decides whether batches are allowed. */
  readonly revision: () => string;
  readonly onmessage: (message: JsonRpcMessage, raw?: string) => void;
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

  constructor(options: StdioDownstreamOptions) {
    this.#o = options;
    this.#bound = new StreamBound(options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES);
    this.#input = options.inputGate ?? new FlowGate();
    this.#gates = [this.#input, ...(options.producers ?? [])];
    this.#decoder = new LineDecoder(
      { line: (text) => this.#line(text), oversized: (head, bytes) => this.#oversized(head, bytes) },
      { maxBytes: options.maxMessageBytes },
    );
  }

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
    this.#o.output.on('error', (error) => {
      // The client went away (EPIPE): nothing more can be delivered.
      this.#o.metrics.inc('delivery_errors_total', { transport: 'stdio' });
      this.#o.logger.debug({ err: error.message }, 'writing stdout failed');
    });
  }

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
      readInbound(text, { allowBatch: allowsBatch(revision), revision }),
      this.#o.metrics,
      'stdio',
    );
    if (payload.error) {
      this.#o.metrics.inc('malformed_messages_total', { side: 'client', transport: 'stdio' });
      this.#o.logger.warn({ error: payload.error.message }, 'unusable input from the client; dropped');
      return;
    }
    if (payload.batch) this.#openBatch(payload.items);
    for (const item of payload.items) this.#item(item);
  }

  #openBatch(items: readonly InboundItem[]): void {
    const group: BatchGroup = { waiting: new Set(), responses: [] };
    for (const item of items) {
      if (item.kind === 'message' && 'method' in item.message && 'id' in item.message) {
        const key = idKey(item.message.id);
        group.waiting.add(key);
        this.#batches.set(key, group);
      } else if (item.kind === 'reply') {
        const key = idKey(item.response.id ?? '');
        group.waiting.add(key);
        this.#batches.set(key, group);
      }
    }
  }

  #item(item: InboundItem): void {
    switch (item.kind) {
      case 'message':
        this.#o.onmessage(item.message, item.raw);
        return;
      case 'reply':
        this.#o.metrics.inc('malformed_messages_total', { side: 'client', transport: 'stdio' });
        this.send(JSON.stringify(item.response), item.response, {
          kind: 'response',
          request: item.response.id ?? '',
        });
        return;
      case 'forward-error':
        this.#o.metrics.inc('malformed_messages_total', { side: 'client', transport: 'stdio' });
        this.#o.onmessage(item.response);
        return;
      case 'drop':
        this.#o.metrics.inc('malformed_messages_total', { side: 'client', transport: 'stdio' });
        this.#o.logger.warn(
          { error: item.error.message },
          'invalid message from the client without a readable id; dropped',
        );
        return;
    }
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
