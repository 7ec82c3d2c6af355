/**
 * What the checker reads of a tape: the message lines in order, and the header's handshake. A
 * narrow, structural view, so the checker's pure parts do not depend on how the reader builds a
 * tape (`tape-format.ts`'s `Tape` is one).
 */
import type { JsonObject, JsonRpcMessage, JsonRpcRequest } from '../../protocol/jsonrpc/types.js';
import { idKey, isRequest, isResponse } from '../../protocol/jsonrpc/types.js';

export interface CheckLine {
  readonly seq: number;
  readonly t: number;
  readonly dir: 'c2s' | 's2c';
  readonly message: JsonRpcMessage;
  readonly re?: number;
}

export interface CheckTape {
  readonly header: {
    readonly server: { readonly initialize: JsonObject };
    readonly client?: { readonly initialize: JsonObject };
    /**
     * Values the recorder cut (secrets; `path` points into the line, `/message/...`): not
     * compared, since the live side has them whole.
     */
    readonly redactions?: readonly { readonly seq: number; readonly path: string }[];
    /** Lines whose payload the tape does not hold whole (an export of digests): not compared. */
    readonly incomplete?: readonly { readonly seq: number }[];
  };
  readonly messages: readonly CheckLine[];
}

/** The request line a response line answers: by `re`, else the last earlier request of the other side with its id. */
export function requestLineOf(tape: CheckTape, response: CheckLine): CheckLine | undefined {
  if (!isResponse(response.message)) return undefined;
  if (response.re !== undefined) return tape.messages.find((l) => l.seq === response.re);
  const id = response.message.id;
  if (id === null) return undefined;
  const key = idKey(id);
  for (let i = tape.messages.indexOf(response) - 1; i >= 0; i -= 1) {
    const line = tape.messages[i] as CheckLine;
    if (line.dir !== response.dir && isRequest(line.message) && idKey(line.message.id) === key) return line;
  }
  return undefined;
}

/** The response line to request line `request`, if the tape holds one. */
export function responseLineOf(tape: CheckTape, request: CheckLine): CheckLine | undefined {
  const start = tape.messages.indexOf(request);
  for (let i = start + 1; i < tape.messages.length; i += 1) {
    const line = tape.messages[i] as CheckLine;
    if (line.dir !== request.dir && isResponse(line.message) && requestLineOf(tape, line) === request)
      return line;
  }
  return undefined;
}

/** What a call is about, for the report: a tool's or prompt's name, a resource's URI. */
export function targetOf(request: JsonRpcRequest): string | undefined {
  const params = request.params;
  if (params === undefined || Array.isArray(params)) return undefined;
  const p = params as JsonObject;
  if (typeof p.name === 'string') return p.name;
  if (typeof p.uri === 'string') return p.uri;
  const ref = p.ref as JsonObject | undefined;
  if (ref !== undefined && typeof ref === 'object' && ref !== null) {
    if (typeof ref.name === 'string') return ref.name;
    if (typeof ref.uri === 'string') return ref.uri;
  }
  return undefined;
}

/** The progress token a request carries, as a map key, if any. */
export function progressTokenOf(message: JsonRpcMessage): string | undefined {
  const params = (message as { params?: unknown }).params;
  if (params === null || typeof params !== 'object' || Array.isArray(params)) return undefined;
  const holder = params as JsonObject;
  const meta = holder._meta as JsonObject | undefined;
  const token = isRequest(message) ? meta?.progressToken : holder.progressToken;
  return typeof token === 'string' || typeof token === 'number' ? idKey(token) : undefined;
}
