/**
 * The gateway's own stdin/stdout as the downstream of one client (the stdio gateway). Reads
 * newline-delimited JSON-RPC, answers malformed input itself where an id is readable, hands valid
 * messages to `onmessage`, and writes what the router sends. A request carrying `_meta` members of
 * the gateway's namespace is refused, a notification or response loses them (`client-meta.ts`). A
 * batch (2025-03-26 only) is answered with one batch of responses once all of its requests are
 * answered.
 */
import type { Readable, Writable } from 'node:stream';
import { type InboundItem, readInbound } from '../../core/inbound.js';
import type { Delivery, DownstreamPort } from '../../core/ports.js';
import type { Logger } from '../../observe/logger.js';
import type { Metrics } from '../../observe/metrics.js';
import { idKey, type JsonRpcMessage, type JsonRpcResponse } from '../../protocol/jsonrpc/types.js';
import { allowsBatch } from '../../protocol/mcp/revisions.js';
import { screenClientPayload } from '../client-meta.js';
import { judgeOversized } from '../oversized.js';
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
}

interface BatchGroup {
  readonly waiting: Set<string>;
  readonly responses: JsonRpcResponse[];
}

export class StdioDownstream implements DownstreamPort {
  readonly #o: StdioDownstreamOptions;
  readonly #decoder: LineDecoder;
  /** Pending batches by the id key of each request still unanswered in them. */
  readonly #batches = new Map<string, BatchGroup>();
  #ended = false;

  constructor(options: StdioDownstreamOptions) {
    this.#o = options;
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
