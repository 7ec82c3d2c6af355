/** The trace worker for unit tests, compiled from the TypeScript sources (see worker-module.ts). */
import { compiledWorkerUrl } from '../../test-support/worker-module.js';
import type { TraceWorkerModule } from '../worker-trace-store.js';

/** The compiled worker module (built on first use). */
export function testTraceWorker(): TraceWorkerModule {
  return { url: compiledWorkerUrl('trace/trace-worker.ts') };
}
