/**
 * A tape read as what the replay plays: for each client request, the server's answer and what the
 * server said during the call (progress, log lines, requests to the client with the client's
 * recorded answers), in order with their recorded times. Built once per replay; immutable.
 *
 * Ties come from the lines' `re` (a response's request; a message sent during a call: that call's
 * request); a progress notification without `re` is tied by its progress token to the request that
 * carried it. A server→client request's recorded answer is the client's line whose `re` names it.
 */
import type { JsonObject, JsonRpcMessage, JsonRpcRequest } from '../../protocol/jsonrpc/types.js';
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

function isRequest(message: JsonRpcMessage): message is JsonRpcRequest {
  return 'method' in message && 'id' in message;
}

function progressTokenOf(message: JsonRpcMessage): unknown {
  if (!('method' in message)) return undefined;
  const params = message.params as
    | { _meta?: { progressToken?: unknown }; progressToken?: unknown }
    | undefined;
  return message.method === 'notifications/progress' ? params?.progressToken : params?._meta?.progressToken;
}

/** Reads `tape` as calls (see the file comment). */
export function buildScript(tape: Tape): ReplayScript {
  type Building = { request: ScriptCall['request']; steps: ScriptStep[]; response?: ReplayLine };
  const calls = new Map<number, Building>();
  const serverRequests = new Map<number, { call: Building; index: number }>();
  const byToken = new Map<string, Building>();
  for (const line of tape.messages) {
    const message = line.message;
    if (line.dir === 'c2s') {
      if (isRequest(message)) {
        const call: Building = { request: line as ScriptCall['request'], steps: [] };
        calls.set(line.seq, call);
        const token = progressTokenOf(message);
        if (token !== undefined) byToken.set(JSON.stringify(token), call);
        continue;
      }
      // The client's answer to a server request.
      if (!('method' in message) && line.re !== undefined) {
        const asked = serverRequests.get(line.re);
        if (asked)
          asked.call.steps[asked.index] = { ...(asked.call.steps[asked.index] as ScriptStep), answer: line };
      }
      continue;
    }
    const token = progressTokenOf(message);
    const call =
      (line.re === undefined ? undefined : calls.get(line.re)) ??
      (token === undefined ? undefined : byToken.get(JSON.stringify(token)));
    if (!call) continue;
    if (!('method' in message)) {
      if (call.response === undefined) call.response = line;
      continue;
    }
    call.steps.push({ line });
    if (isRequest(message)) serverRequests.set(line.seq, { call, index: call.steps.length - 1 });
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
