/**
 * A worker thread of a parallel `verifyLedger` (verify-pool.ts): checks the segments it is sent
 * (verify-segment.ts), one after another, and posts each `SegmentResult` under the task's number.
 * An I/O error is posted as `{ id, error }`; the verifier then walks that segment itself.
 */
import { parentPort } from 'node:worker_threads';
import { type SegmentTask, verifySegment } from './verify-segment.js';

const port = parentPort;
if (port === null) throw new Error('verify-worker.js runs as a worker thread');

let queue = Promise.resolve();
port.on('message', ({ id, task }: { id: number; task: SegmentTask }) => {
  queue = queue.then(async () => {
    try {
      const result = await verifySegment(task);
      port.postMessage({ id, result });
    } catch (error) {
      port.postMessage({ id, error: error instanceof Error ? error.message : String(error) });
    }
  });
});
