/**
 * How a transport answers what one payload (a line, a POST body) carried, so that every request
 * in it gets exactly one answer of its own (JSON-RPC 2.0: "the Server should respond with an
 * Array containing the corresponding Response objects"; MCP 2025-03-26 batches).
 *
 * Responses are matched to requests by id, and a transport collects a batch's answers by id; so
 * two requests in flight under one id cannot both be answered, whichever way the answers come.
 * Hence the rule, decided here before anything reaches the router:
 *
 * - a request whose id is already in flight in the session, or that appears more than once in
 *   the payload (an invalid request's id counts), is refused (-32600), every occurrence of it:
 *   none of them runs, so an answer under that id never leaves the client guessing which of its
 *   requests it belongs to;
 * - an invalid request with a readable id is answered with its own error;
 * - an invalid element without a readable id is answered with `id: null` in a batch (JSON-RPC),
 *   and only counted when it came alone (nobody to answer: the transport decides);
 * - everything else goes to the router, and the ids the router will answer are unique.
 *
 * The transport's own answers never go through the router or its id-keyed delivery, so they can
 * neither take nor be taken by the slot of a request the router answers.
 */
import { JsonRpcCode } from '../protocol/jsonrpc/codes.js';
import { idKey, type JsonRpcErrorResponse, type RequestId } from '../protocol/jsonrpc/types.js';
import type { InboundItem } from './inbound.js';

/** `planPayload`'s split of one payload: what goes to the router, and what the transport answers itself. */
export interface PayloadPlan {
  /** What goes to the router, in payload order. */
  readonly dispatch: readonly InboundItem[];
  /** Ids of the requests among `dispatch`: the router answers each once; no two are the same. */
  readonly awaited: readonly RequestId[];
  /** The transport's own answers, in payload order: one per request it refuses. */
  readonly answers: readonly JsonRpcErrorResponse[];
  /** Invalid elements without a readable id, not answered (`batch` false only), for the log. */
  readonly dropped: readonly Extract<InboundItem, { kind: 'drop' }>[];
  /** How many of `answers` refuse a request for its id (in flight, or repeated), for the count. */
  readonly duplicates: number;
}

/** The id of a request (valid, or invalid but answered under its id); undefined for the rest. */
function requestIdOf(item: InboundItem): RequestId | undefined {
  if (item.kind === 'reply') return item.response.id ?? undefined;
  if (item.kind !== 'message') return undefined;
  const message = item.message;
  return 'method' in message && 'id' in message ? message.id : undefined;
}

/** The refusal of a request whose id cannot be told apart from another request's. */
export function idInUseError(id: RequestId, why: 'in-flight' | 'repeated'): JsonRpcErrorResponse {
  const shown = JSON.stringify(id);
  return {
    jsonrpc: '2.0',
    id,
    error: {
      code: JsonRpcCode.InvalidRequest,
      message:
        why === 'in-flight'
          ? `Invalid Request: id ${shown.length > 60 ? `${shown.slice(0, 57)}...` : shown} is already in use by a request in flight`
          : `Invalid Request: id ${shown.length > 60 ? `${shown.slice(0, 57)}...` : shown} appears more than once in this batch; none of its requests was run (ids must be unique among requests in flight)`,
    },
  };
}

/**
 * Splits a payload's items (see the module comment). `inFlight` says whether a request with this
 * id is already waiting for its answer in the session.
 */
export function planPayload(
  items: readonly InboundItem[],
  batch: boolean,
  inFlight: (id: RequestId) => boolean,
): PayloadPlan {
  const seen = new Map<string, number>();
  for (const item of items) {
    const id = requestIdOf(item);
    if (id === undefined) continue;
    const key = idKey(id);
    seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  const dispatch: InboundItem[] = [];
  const awaited: RequestId[] = [];
  const answers: JsonRpcErrorResponse[] = [];
  const dropped: Extract<InboundItem, { kind: 'drop' }>[] = [];
  let duplicates = 0;
  for (const item of items) {
    switch (item.kind) {
      case 'reply':
        answers.push(item.response);
        continue;
      case 'drop':
        if (batch) answers.push({ jsonrpc: '2.0', id: null, error: item.error });
        else dropped.push(item);
        continue;
      case 'forward-error':
        dispatch.push(item);
        continue;
      case 'message': {
        const id = requestIdOf(item);
        if (id === undefined) {
          // A notification or a response (to a server's request).
          dispatch.push(item);
          continue;
        }
        if (inFlight(id)) {
          answers.push(idInUseError(id, 'in-flight'));
          duplicates++;
        } else if ((seen.get(idKey(id)) ?? 0) > 1) {
          answers.push(idInUseError(id, 'repeated'));
          duplicates++;
        } else {
          dispatch.push(item);
          awaited.push(id);
        }
      }
    }
  }
  return { dispatch, awaited, answers, dropped, duplicates };
}
