/**
 * The messages between `WorkerTraceStore` (the gateway's thread) and `trace-worker.ts`, and the
 * shared memory they use: one `Int32` reply counter at byte 0 (the waiting thread sleeps on it
 * with `Atomics.wait`) and three `BigInt64` counters from byte 8 (records written, records lost
 * to write errors, failed writes), which the worker adds to and the gateway reads without a message.
 */
import type { MessagePort } from 'node:worker_threads';
import type { TracePayloadMode, TracePayloadOptions } from './payload-guard.js';
import type { TracePruneOptions, TraceSessionInfo } from './types.js';

/** Bytes of shared memory: the reply counter (padded to 8) and three 64-bit counters. */
export const SHARED_BYTES = 8 + 3 * 8;

/** Indexes of the 64-bit counters. */
export const WorkerCounter = { Written: 0, Failed: 1, Errors: 2 } as const;

export interface TraceWorkerData {
  readonly path: string;
  readonly maxPayloadBytes?: number;
  readonly payloads?: TracePayloadMode;
  readonly redact?: TracePayloadOptions['redact'];
  readonly busyTimeoutMs?: number;
  readonly shared: SharedArrayBuffer;
  /** Where answers to `call`, `close` and the opening go; read synchronously by the gateway. */
  readonly reply: MessagePort;
}

/** A read (or `prune`) answered synchronously; `barrier` answers once everything before it is written. */
export type TraceWorkerCall =
  | { readonly op: 'call'; readonly method: 'sessions'; readonly args: [{ readonly limit?: number }?] }
  | {
      readonly op: 'call';
      readonly method: 'sessionInfo' | 'session' | 'subtree' | 'get';
      readonly args: [string];
    }
  | {
      readonly op: 'call';
      readonly method: 'follow';
      readonly args: [string, { readonly maxDepth?: number }?];
    }
  | { readonly op: 'call'; readonly method: 'prune'; readonly args: [TracePruneOptions] }
  | { readonly op: 'call'; readonly method: 'barrier'; readonly args: [] };

export type TraceWorkerRequest =
  | { readonly op: 'append'; readonly slots: unknown[]; readonly count: number }
  | { readonly op: 'session'; readonly info: TraceSessionInfo }
  | TraceWorkerCall
  | { readonly op: 'close' };

/** An error as it crosses back: a `SwitchboardError`'s code and details survive. */
export interface TraceWorkerError {
  readonly message: string;
  readonly code?: string;
  readonly details?: Readonly<Record<string, unknown>>;
}

/** What the reply port carries. */
export type TraceWorkerReply =
  | { readonly ok: true; readonly value?: unknown }
  | { readonly ok: false; readonly error: TraceWorkerError };

/** What the worker posts on its own (not awaited by anyone). */
export interface TraceWorkerNotice {
  readonly type: 'write-error';
  readonly error: TraceWorkerError;
  /** Records lost with this write (0 for a session upsert). */
  readonly lost: number;
}
