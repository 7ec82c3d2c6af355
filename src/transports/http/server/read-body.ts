import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingMessage } from 'node:http';
import { currentRequestScope } from '../../../audit/request-scope.js';

export type BodyResult =
  | { readonly kind: 'ok'; readonly text: string }
  | { readonly kind: 'too-large' }
  /** The body did not arrive whole within the time allowed (a slow or stalled sender). */
  | { readonly kind: 'timeout' }
  /** The client went away before the body was complete. */
  | { readonly kind: 'aborted' };

export interface BodyLimits {
  /** The largest body read, in bytes. */
  readonly maxBytes: number;
  /**
   * How long the whole body may take from the moment it is asked for (right after the headers).
   * A deadline for the body, not an idle timer between chunks: a sender dripping one byte at a
   * time (slow loris) is cut at the same moment as one that sends nothing.
   */
  readonly timeoutMs: number;
}

/** The longest delay `setTimeout` honours (about 24.8 days); longer ones would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Reads a request body as UTF-8, never holding more than `limits.maxBytes` bytes: a body announced
 * or found to be larger is refused as soon as that is known, and the rest is not read.
 */
export function readBody(req: IncomingMessage, limits: BodyLimits): Promise<BodyResult> {
  return new Promise((resolve) => readBodyThen(req, limits, resolve));
}

/**
 * {@link readBody} with a callback, called exactly once: the gateway's POST path goes on from it
 * without a promise (with the request scope's `AsyncLocalStorage` on, every promise costs a hook).
 * On `too-large` and `timeout` reading stops (the stream is paused): the caller answers with
 * `Connection: close`, so the connection ends with its answer.
 */
export function readBodyThen(
  req: IncomingMessage,
  limits: BodyLimits,
  given: (result: BodyResult) => void,
): void {
  // Body events run in the connection's async context: a request scope opened around the request
  // (the client's address, `McpHttpServer`'s `scopeClientAddress`) is carried over to `done`.
  const done = currentRequestScope() === undefined ? given : AsyncLocalStorage.bind(given);
  const limit = limits.maxBytes;
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
    clearTimeout(deadline);
    done(result);
  };
  const deadline: NodeJS.Timeout = setTimeout(
    () => {
      chunks.length = 0;
      req.pause();
      settle({ kind: 'timeout' });
    },
    Math.min(Math.max(1, limits.timeoutMs), MAX_TIMER_MS),
  );
  // The connection keeps the process alive while the body is awaited, not this timer.
  deadline.unref();
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
