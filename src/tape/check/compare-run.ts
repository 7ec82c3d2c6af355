/**
 * Judges a live run against its tape: every answer, every server→client request and every
 * progress sequence the tape holds, compared with what the live server did. Pure: the runner
 * (`gateways/tape-checker.ts`) gathers, this decides, `check-report.ts` prints.
 *
 * - An answer to a client request is compared as `{result}` or `{error}` (the JSON-RPC `id` and
 *   `jsonrpc` never), with the transport members of `result._meta` taken out
 *   (replay's rule, `replay/request-key.ts`), under the rules (`--ignore` paths, volatile values). No live answer
 *   within the timeout: `missing`.
 * - A server→client request the tape holds is compared by its `params` (transport `_meta` out);
 *   one the live server never made is `missing`, one the tape cannot answer is `unexpected`.
 * - Progress notifications are compared by count and order only: a request that had N of them
 *   must have N live ones, all before its answer; their values (`progress`, `total`, `message`)
 *   depend on timing and are not compared.
 * - Other notifications (log messages, list changes, resource updates) are not compared: they come
 *   when the server's clock says, not when the client asks.
 */
import {
  isNotification,
  isRequest,
  isResponse,
  type JsonRpcMessage,
  type JsonRpcRequest,
  type JsonRpcResponse,
} from '../../protocol/jsonrpc/types.js';
import { normaliseParams } from '../replay/request-key.js';
import { type Difference, type DiffRules, diffJson } from './answer-diff.js';
import { type CheckTape, progressTokenOf, responseLineOf, targetOf } from './check-tape-view.js';
import { type IgnoreRule, literalPointer, type PointerPattern, patternsFor } from './json-pointer-pattern.js';

/** A server→client request the live server made, and the recorded one it was paired with. */
export interface LiveServerRequest {
  readonly recorded?: number;
  readonly live: JsonRpcRequest;
}

/** What happened in a live run, paired with the tape's lines by `seq` (see `tape-checker.ts`). */
export interface LiveRun {
  /** The live answer to each client request, by the request's recorded seq. */
  readonly answers: ReadonlyMap<number, JsonRpcResponse>;
  /** Live progress notifications per client request (recorded seq), and how many came after its answer. */
  readonly progress: ReadonlyMap<number, { readonly count: number; readonly afterAnswer: number }>;
  readonly serverRequests: readonly LiveServerRequest[];
  /** Seqs of requests (client's or server's) given up on: the wait timed out or the server went. */
  readonly missing: readonly number[];
  /** When the run began (epoch milliseconds). */
  readonly startedAt: number;
  /** Every message, in order, as sent and received (`t`: ms since the run began). */
  readonly log: readonly {
    readonly t: number;
    readonly dir: 'c2s' | 's2c';
    readonly message: JsonRpcMessage;
  }[];
  /** Why the server went away before the end, if it did. */
  readonly closed?: string;
}

export type CheckStatus = 'same' | 'differs' | 'missing' | 'unexpected';

/** One comparison of the report. */
export interface CheckItem {
  readonly kind: 'answer' | 'server-request' | 'progress';
  /** The recorded request's seq (absent for an unexpected server request). */
  readonly seq?: number;
  readonly method: string;
  /** A tool's or prompt's name, a resource's URI. */
  readonly target?: string;
  readonly status: CheckStatus;
  readonly differences: readonly Difference[];
  /** What else the reader should know (`missing`: why; progress: the counts). */
  readonly note?: string;
}

export interface CheckReport {
  readonly items: readonly CheckItem[];
  readonly compared: number;
  readonly differing: number;
  /** Calls not compared because the tape does not hold their answers whole (`incomplete`). */
  readonly skipped: number;
  /** Why the server went away before the end, if it did. */
  readonly closed?: string;
}

/**
 * The comparable part of an answer: `{result}` without transport `_meta`, or `{error}`. The
 * transport members are replay's own rule (`replay/request-key.ts`, `isIgnoredMeta`), applied to
 * `result` as it is to `params`: checking and replay agree on what is noise.
 */
export function comparableAnswer(message: JsonRpcResponse): Record<string, unknown> {
  return 'error' in message ? { error: message.error } : { result: normaliseParams(message.result) ?? {} };
}

/** The comparable part of a request: `{params}` without transport `_meta`. */
function comparableRequest(message: JsonRpcRequest): Record<string, unknown> {
  return { params: normaliseParams(message.params) ?? {} };
}

/** The rules of a check: `DiffRules`, with `--ignore` patterns that may be scoped to a method. */
export interface CheckRules extends Omit<DiffRules, 'ignore'> {
  readonly ignore?: readonly (IgnoreRule | PointerPattern)[];
}

/** Compares `run` with `tape` under `rules` (see the module comment). */
export function compareRun(tape: CheckTape, run: LiveRun, checkRules: CheckRules): CheckReport {
  const ignores = (checkRules.ignore ?? []).map(
    (rule): IgnoreRule => (Array.isArray(rule) ? { pattern: rule } : (rule as IgnoreRule)),
  );
  const items: CheckItem[] = [];
  const missing = new Set(run.missing);
  const why =
    run.closed === undefined ? 'no answer within the timeout' : `the server went away (${run.closed})`;
  const recordedProgress = countRecordedProgress(tape);
  const incomplete = new Set((tape.header.incomplete ?? []).map((i) => i.seq));
  /** The rules for comparing line `seq` of `method`: its ignores, plus the paths its recorder cut as secrets. */
  const rulesFor = (seq: number, method: string): DiffRules => {
    const cut = (tape.header.redactions ?? [])
      .filter((r) => r.seq === seq && r.path.startsWith('/message/'))
      .map((r) => literalPointer(r.path.slice('/message'.length)));
    return { ...checkRules, ignore: [...patternsFor(ignores, method), ...cut] };
  };
  let skipped = 0;
  for (const line of tape.messages) {
    const m = line.message;
    if (!isRequest(m)) continue;
    const target = targetOf(m);
    const about = { seq: line.seq, method: m.method, ...(target === undefined ? {} : { target }) };
    if (line.dir === 'c2s') {
      const answer = responseLineOf(tape, line);
      const recorded = answer?.message;
      if (answer === undefined || recorded === undefined || !isResponse(recorded)) continue; // cancelled, or the tape ends first
      if (incomplete.has(line.seq) || incomplete.has(answer.seq)) {
        skipped += 1;
        continue;
      }
      const live = run.answers.get(line.seq);
      if (live === undefined) {
        items.push({
          kind: 'answer',
          ...about,
          status: 'missing',
          differences: [],
          note: missing.has(line.seq) ? why : 'no answer',
        });
        continue;
      }
      const differences = diffJson(
        comparableAnswer(recorded),
        comparableAnswer(live),
        rulesFor(answer.seq, m.method),
      );
      items.push({
        kind: 'answer',
        ...about,
        status: differences.length === 0 ? 'same' : 'differs',
        differences,
      });
      const want = recordedProgress.get(line.seq) ?? 0;
      const got = run.progress.get(line.seq) ?? { count: 0, afterAnswer: 0 };
      if (want > 0 || got.count > 0) {
        const fine = want === got.count && got.afterAnswer === 0;
        const late = got.afterAnswer > 0 ? `, ${got.afterAnswer} after the answer` : '';
        items.push({
          kind: 'progress',
          ...about,
          status: fine ? 'same' : 'differs',
          differences: [],
          note: `${want} recorded, ${got.count} live${late}`,
        });
      }
    } else {
      const live = run.serverRequests.find((r) => r.recorded === line.seq)?.live;
      if (live === undefined) {
        items.push({
          kind: 'server-request',
          ...about,
          status: 'missing',
          differences: [],
          note: 'the live server did not make it',
        });
        continue;
      }
      const differences = diffJson(
        comparableRequest(m),
        comparableRequest(live),
        rulesFor(line.seq, m.method),
      );
      items.push({
        kind: 'server-request',
        ...about,
        status: differences.length === 0 ? 'same' : 'differs',
        differences,
      });
    }
  }
  for (const r of run.serverRequests) {
    if (r.recorded !== undefined) continue;
    const target = targetOf(r.live);
    items.push({
      kind: 'server-request',
      method: r.live.method,
      ...(target === undefined ? {} : { target }),
      status: 'unexpected',
      differences: [],
      note: 'the tape holds no such request (answered -32601)',
    });
  }
  const differing = items.filter((i) => i.status !== 'same').length;
  return {
    items,
    compared: items.length,
    differing,
    skipped,
    ...(run.closed === undefined ? {} : { closed: run.closed }),
  };
}

/** Recorded progress notifications per client request seq (by `re`, else by progress token). */
function countRecordedProgress(tape: CheckTape): Map<number, number> {
  const byToken = new Map<string, number>();
  for (const line of tape.messages) {
    if (line.dir !== 'c2s' || !isRequest(line.message)) continue;
    const token = progressTokenOf(line.message);
    if (token !== undefined) byToken.set(token, line.seq);
  }
  const counts = new Map<number, number>();
  for (const line of tape.messages) {
    const m = line.message;
    if (line.dir !== 's2c' || !isNotification(m) || m.method !== 'notifications/progress') continue;
    const token = progressTokenOf(m);
    const seq = (token === undefined ? undefined : byToken.get(token)) ?? line.re;
    if (seq !== undefined) counts.set(seq, (counts.get(seq) ?? 0) + 1);
  }
  return counts;
}
