/**
 * Copies each signed checkpoint line to the anchor: a file elsewhere (another disk, a mount from
 * another host, WORM storage), appended `O_APPEND`, or an HTTP endpoint that receives the line as
 * the body of a POST. The anchor is what makes truncation detectable: whoever rewrites the ledger
 * directory cannot take back a checkpoint already copied to another trust domain.
 *
 * Pushes run one after another in the background: they never delay or fail an append. A failed
 * push is logged and counted (`audit_anchor_errors_total`) and not retried; the next checkpoint
 * covers everything before it, so it anchors the missed one's records as well.
 *
 * For the same reason at most one line waits behind the push in flight: a newer checkpoint takes
 * the waiting one's place (counted in `audit_anchor_skipped_total`, and a warning when skipping
 * starts). Without that bound an anchor slower than the checkpoints (an endpoint that hangs until
 * the 10 s timeout, a busy gateway checkpointing several times a second) would queue lines without
 * end: memory, stale pushes replayed long after, and a shutdown that waits for all of them.
 */
import { appendFile } from 'node:fs/promises';
import { request } from 'undici';
import type { Logger } from '../../observe/logger.js';
import type { Metrics } from '../../observe/metrics.js';

/** Where checkpoints are copied: exactly one of `path` and `url`. */
export interface AnchorOptions {
  readonly path?: string;
  readonly url?: string;
  /** Extra request headers for `url` (e.g. an authorization header). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** Counter of failed pushes. */
export const ANCHOR_ERRORS_METRIC = 'audit_anchor_errors_total';
/** Counter of successful pushes. */
export const ANCHOR_PUSHES_METRIC = 'audit_anchor_pushes_total';
/** Counter of checkpoints not pushed because a newer one replaced them while the anchor was busy. */
export const ANCHOR_SKIPPED_METRIC = 'audit_anchor_skipped_total';

/** How long one HTTP push may take. */
const HTTP_TIMEOUT_MS = 10_000;

/** The background copier of checkpoint lines. */
export interface AnchorSink {
  /** A description for logs: the path or the URL. */
  readonly target: string;
  /**
   * Queues `line` (a checkpoint line without newline), in place of any line still waiting (see the
   * module comment). Never throws.
   */
  push(line: string): void;
  /** Resolves when every queued push has finished (succeeded or failed). */
  flush(): Promise<void>;
}

async function post(url: string, headers: Readonly<Record<string, string>>, line: string): Promise<void> {
  const { statusCode, body } = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: `${line}\n`,
    headersTimeout: HTTP_TIMEOUT_MS,
    bodyTimeout: HTTP_TIMEOUT_MS,
  });
  await body.dump();
  if (statusCode < 200 || statusCode > 299) throw new Error(`the anchor answered HTTP ${statusCode}`);
}

/** A URL without its user and password, for logs. */
function describeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.toString();
  } catch {
    return '(invalid URL)';
  }
}

/** The sink for `options`, or `undefined` when no anchor is configured. */
export function createAnchorSink(
  options: AnchorOptions | undefined,
  logger: Logger,
  metrics: Metrics,
): AnchorSink | undefined {
  if (options?.path === undefined && options?.url === undefined) return undefined;
  const { path, url } = options;
  const headers = options.headers ?? {};
  const target = path ?? describeUrl(url as string);
  /** Settles once the pushes started so far, and the line waiting behind them, are done. */
  let chain: Promise<void> = Promise.resolve();
  let busy = false;
  /** The line waiting behind the push in flight: the newest checkpoint not yet sent. */
  let waiting: string | undefined;
  let skipping = false;
  const send = async (line: string): Promise<void> => {
    try {
      if (path !== undefined) await appendFile(path, `${line}\n`, { mode: 0o600, flag: 'a' });
      else await post(url as string, headers, line);
      metrics.inc(ANCHOR_PUSHES_METRIC);
    } catch (error) {
      metrics.inc(ANCHOR_ERRORS_METRIC);
      logger.error(
        { anchor: target, err: (error as Error).message },
        'audit ledger: cannot copy a checkpoint to the anchor; truncation after the last anchored checkpoint cannot be detected',
      );
    }
  };
  const drain = async (first: string): Promise<void> => {
    for (let line: string | undefined = first; line !== undefined; ) {
      await send(line);
      line = waiting;
      waiting = undefined;
    }
    busy = false;
    skipping = false;
  };
  return {
    target,
    push(line: string): void {
      if (!busy) {
        busy = true;
        chain = drain(line);
        return;
      }
      if (waiting !== undefined) {
        metrics.inc(ANCHOR_SKIPPED_METRIC);
        if (!skipping) {
          skipping = true;
          logger.warn(
            { anchor: target },
            'audit ledger: the anchor is slower than checkpoints are written; only the newest waiting checkpoint will be copied',
          );
        }
      }
      waiting = line;
    },
    flush(): Promise<void> {
      return chain;
    },
  };
}
