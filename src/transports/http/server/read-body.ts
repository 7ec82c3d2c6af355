import type { IncomingMessage } from 'node:http';

export type BodyResult =
  | { readonly kind: 'ok'; readonly text: string }
  | { readonly kind: 'too-large' }
  /** The client went away before the body was complete. */
  | { readonly kind: 'aborted' };

/**
 * Reads a request body as UTF-8, never holding more than `limit` bytes: a body announced or found
 * to be larger is refused as soon as that is known, and the rest is not read.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<BodyResult> {
  return new Promise((resolve) => {
    const announced = Number(req.headers['content-length']);
    if (Number.isFinite(announced) && announced > limit) {
      req.resume();
      resolve({ kind: 'too-large' });
      return;
    }
    const chunks: Buffer[] = [];
    let length = 0;
    let settled = false;
    const settle = (result: BodyResult) => {
      if (settled) return;
      settled = true;
      resolve(result);
    };
    req.on('data', (chunk: Buffer) => {
      if (settled) return;
      length += chunk.length;
      if (length > limit) {
        chunks.length = 0;
        req.pause();
        settle({ kind: 'too-large' });
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => settle({ kind: 'ok', text: Buffer.concat(chunks, length).toString('utf8') }));
    req.once('aborted', () => settle({ kind: 'aborted' }));
    req.once('error', () => settle({ kind: 'aborted' }));
    req.once('close', () =>
      settle(
        length <= limit && req.complete
          ? { kind: 'ok', text: Buffer.concat(chunks, length).toString('utf8') }
          : { kind: 'aborted' },
      ),
    );
  });
}
