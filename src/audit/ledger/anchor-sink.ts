/**
 * Copies each signed checkpoint line to the anchor: a file elsewhere (another disk, a mount from
 * another host, WORM storage), appended `O_APPEND`, or an HTTP endpoint that receives the line as
 * the body of a POST. The anchor is what makes truncation detectable: whoever rewrites the ledger
 * directory cannot take back a checkpoint already copied to another trust domain.
 *
 * Pushes run one after another in the background: they never delay or fail an append. A failed
 * push is logged and counted (`audit_anchor_errors_total`) and not retried; the next checkpoint
 * covers everything before it, so it anchors the missed one's records as well.
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

/** How long one HTTP push may take. */
const HTTP_TIMEOUT_MS = 10_000;

/** The background copier of checkpoint lines. */
export interface AnchorSink {
  /** A description for logs: the path or the URL. */
  readonly target: string;
  /** Queues `line` (a checkpoint line without newline). Never throws. */
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
  let chain: Promise<void> = Promise.resolve();
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
  return {
    target,
    push(line: string): void {
      chain = chain.then(() => send(line));
    },
    flush(): Promise<void> {
      return chain;
    },
  };
}
