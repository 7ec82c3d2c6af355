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
  return new Promise((resolve) => readBodyThen(req, limit, resolve));
}

/**
 * {@link readBody} with a callback, called exactly once: the gateway's POST path goes on from it
 * without a promise (with the request scope's `AsyncLocalStorage` on, every promise costs a hook).
 */
export function readBodyThen(req: IncomingMessage, limit: number, done: (result: BodyResult) => void): void {
  const announced = Number(req.headers['content-length']);
  if (Number.isFinite(announced) && announced > limit) {
    req.resume();
    done({ kind: 'too-large' });
    return;
  }
  const chunks: Buffer[] = [];
  let length = 0;
  let settled = false;
  const settle = (result: BodyResult) => {
    if (settled) return;
    settled = true;
    done(result);
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
}
