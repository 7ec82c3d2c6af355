/**
 * Opens the embedded trace (SQLite under the data directory, written by a worker thread) and the
 * tap that feeds it. Shared by every command that runs a gateway.
 */

import { join } from 'node:path';
import { ensureDataDir } from '../config/data-dir.js';
import type { HopEvent, Tap } from '../core/taps.js';
import type { Logger } from '../observe/logger.js';
import type { Metrics } from '../observe/metrics.js';
import { TraceRecorder } from '../trace/trace-recorder.js';
import { traceTap } from '../trace/trace-tap.js';
import type { OtelIds } from '../trace/types.js';
import { WorkerTraceStore, type WorkerTraceStoreOptions } from '../trace/worker-trace-store.js';

export interface OpenTrace {
  readonly tap: Tap;
  readonly recorder: TraceRecorder;
  readonly path: string;
}

export function openTrace(
  dataDir: string,
  logger: Logger,
  metrics: Metrics,
  options: Pick<WorkerTraceStoreOptions, 'maxPayloadBytes' | 'payloads' | 'redact'> & {
    /** With OpenTelemetry on: the trace and span id of a hop's call, kept with its envelope. */
    readonly otelIds?: (event: HopEvent) => OtelIds | undefined;
  } = {},
): OpenTrace {
  ensureDataDir(dataDir);
  const path = join(dataDir, 'trace.db');
  const { otelIds, ...storeOptions } = options;
  const store = new WorkerTraceStore(path, storeOptions);
  const recorder = new TraceRecorder(store, { logger, metrics });
  return { tap: traceTap(recorder, otelIds), recorder, path };
}
