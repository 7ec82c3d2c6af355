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

/** Request seq → its response line, and response seq → its request line, for one tape. */
interface AnswerIndex {
  readonly responseOf: Map<number, CheckLine>;
  readonly requestOf: Map<number, CheckLine>;
}

const indexes = new WeakMap<CheckTape, AnswerIndex>();

/**
 * Pairs every response with its request in one pass: by `re` when the line has it, else with the
 * open request of the other direction with its id (an id is free again once answered), as the
 * tape builder pairs them. Kept per tape, so a long tape costs one walk, not one per question.
 */
function answerIndex(tape: CheckTape): AnswerIndex {
  const known = indexes.get(tape);
  if (known !== undefined) return known;
  const bySeq = new Map(tape.messages.map((l) => [l.seq, l]));
  const open = { c2s: new Map<string, CheckLine>(), s2c: new Map<string, CheckLine>() };
  const index: AnswerIndex = { responseOf: new Map(), requestOf: new Map() };
  for (const line of tape.messages) {
    const m = line.message;
    if (isRequest(m)) {
      open[line.dir].set(idKey(m.id), line);
      continue;
    }
    if (!isResponse(m)) continue;
    const other = line.dir === 'c2s' ? open.s2c : open.c2s;
    const key = m.id === null ? undefined : idKey(m.id);
    const request =
      line.re !== undefined ? bySeq.get(line.re) : key === undefined ? undefined : other.get(key);
    if (request === undefined || request.dir === line.dir) continue;
    if (isRequest(request.message)) other.delete(idKey(request.message.id));
    index.requestOf.set(line.seq, request);
    if (!index.responseOf.has(request.seq)) index.responseOf.set(request.seq, line);
  }
  indexes.set(tape, index);
  return index;
}

/** The request line a response line answers: by `re`, else the open request of the other side with its id. */
export function requestLineOf(tape: CheckTape, response: CheckLine): CheckLine | undefined {
  return answerIndex(tape).requestOf.get(response.seq);
}

/** The response line to request line `request`, if the tape holds one. */
export function responseLineOf(tape: CheckTape, request: CheckLine): CheckLine | undefined {
  return answerIndex(tape).responseOf.get(request.seq);
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
