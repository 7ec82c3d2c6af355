/**
 * A tape read as what the replay plays: for each client request, the server's answer and what the
 * server said during the call (progress, log lines, requests to the client with the client's
 * recorded answers), in order with their recorded times. Built once per replay; immutable.
 *
 * Ties are the lines' `re`, read through the tape's own calls index (`tape-calls.ts`): a response's
 * request; a message sent during a call, that call's request (the recorder ties progress by its
 * token). A server→client request's recorded answer is the client's line whose `re` names it.
 */
import type { JsonObject, JsonRpcRequest } from '../../protocol/jsonrpc/types.js';
import { callsOf } from '../tape-calls.js';
import type { Tape, TapeMessage } from '../tape-format.js';
import type { RecordedRequest } from './tape-matcher.js';

/** A tape line, as the replay reads it. */
export type ReplayLine = TapeMessage;

/** One thing the server said during a call. */
export interface ScriptStep {
  readonly line: ReplayLine;
  /** For a server→client request: the client's recorded answer, if the tape holds it. */
  readonly answer?: ReplayLine;
}

/** One recorded client request and everything the replay plays for it. */
export interface ScriptCall {
  readonly request: ReplayLine & { readonly message: JsonRpcRequest };
  /** What the server sent during the call, in tape order (the answer excluded). */
  readonly steps: readonly ScriptStep[];
  /** The server's answer; absent when the call was cancelled or the tape ended first. */
  readonly response?: ReplayLine;
}

export interface ReplayScript {
  readonly protocolVersion: string;
  readonly initialize: JsonObject;
  readonly calls: ReadonlyMap<number, ScriptCall>;
  /** The recorded client requests the matcher chooses among (the handshake left out). */
  readonly requests: readonly RecordedRequest[];
}

/** Methods the replay answers itself (the handshake) rather than from a matched call. */
export const HANDSHAKE_METHODS: ReadonlySet<string> = new Set(['initialize', 'ping']);

/** The list methods: answered from the tape at any time, any number of times, in every mode. */
export const LIST_METHODS: ReadonlySet<string> = new Set([
  'tools/list',
  'prompts/list',
  'resources/list',
  'resources/templates/list',
]);

/** Reads `tape` as calls (see the file comment). */
export function buildScript(tape: Tape): ReplayScript {
  // The client's recorded answer to each server→client request: the server's "calls" and their answers.
  const answers = new Map<number, ReplayLine>();
  for (const asked of callsOf(tape, 's2c'))
    if (asked.response) answers.set(asked.request.seq, asked.response);
  const calls = new Map<number, ScriptCall>();
  for (const call of callsOf(tape, 'c2s')) {
    const steps = call.during
      .filter((line) => line.dir === 's2c' && 'method' in line.message)
      .map((line): ScriptStep => {
        const answer = answers.get(line.seq);
        return answer ? { line, answer } : { line };
      });
    calls.set(call.request.seq, {
      request: call.request as ScriptCall['request'],
      steps,
      ...(call.response ? { response: call.response } : {}),
    });
  }
  const requests = [...calls.values()]
    .filter((c) => !HANDSHAKE_METHODS.has(c.request.message.method))
    .map((c) => ({
      seq: c.request.seq,
      method: c.request.message.method,
      ...(c.request.message.params === undefined ? {} : { params: c.request.message.params }),
    }));
  return {
    protocolVersion: tape.header.protocolVersion,
    initialize: tape.header.server.initialize,
    calls,
    requests,
  };
}
