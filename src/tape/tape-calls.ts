/**
 * A tape read as calls: each request with its answer and what was said during it. Replay (being
 * the server) and check (being the client) both walk a tape this way.
 */
import type { Tape, TapeDirection, TapeMessage } from './tape-format.js';

/** One request of a tape and the lines that belong to it. */
export interface TapeCall {
  /** The request's line. */
  readonly request: TapeMessage;
  /** The response's line; absent when the call was cancelled or the tape ended first. */
  readonly response?: TapeMessage;
  /** Lines tied to the call (`re` = the request's seq) other than the response, in order:
   * progress, a cancellation, server→client requests and their answers' requests' lines. */
  readonly during: readonly TapeMessage[];
}

/** The calls sent in direction `dir` (`c2s`: the client's calls, the default), in tape order. */
export function callsOf(tape: Tape, dir: TapeDirection = 'c2s'): readonly TapeCall[] {
  const calls = new Map<number, { request: TapeMessage; response?: TapeMessage; during: TapeMessage[] }>();
  for (const line of tape.messages) {
    if (line.dir === dir && 'method' in line.message && 'id' in line.message) {
      calls.set(line.seq, { request: line, during: [] });
      continue;
    }
    if (line.re === undefined) continue;
    const call = calls.get(line.re);
    if (call === undefined) continue;
    if (!('method' in line.message) && line.dir !== dir && call.response === undefined) call.response = line;
    else call.during.push(line);
  }
  return [...calls.values()];
}
