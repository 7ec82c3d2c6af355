/**
 * The worker thread of a parallel `verifyLedger`: checks one segment (verify-segment.ts, given as
 * `workerData`) and posts its `SegmentResult` once, the leaf digests transferred rather than
 * copied. An I/O error is posted as `{ error }`; the caller then walks the segment itself.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { type SegmentTask, verifySegment } from './verify-segment.js';

const port = parentPort;
if (port === null) throw new Error('verify-worker.js runs as a worker thread');

try {
  const result = await verifySegment(workerData as SegmentTask);
  port.postMessage({ result }, [result.leaves.buffer as ArrayBuffer]);
} catch (error) {
  port.postMessage({ error: error instanceof Error ? error.message : String(error) });
}
