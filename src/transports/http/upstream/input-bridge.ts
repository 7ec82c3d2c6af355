/**
 * Multi round-trip requests (2026-07-28 MRTR) seen from a legacy client. A modern server that needs
 * sampling, elicitation or the client's roots answers the request with an `InputRequiredResult`
 * (`resultType: "input_required"`, `inputRequests` keyed by the server, an opaque `requestState`)
 * and expects the same request again with `inputResponses` under the same keys and the state echoed
 * exactly. A legacy client knows nothing of this: it expects the server to send it requests.
 *
 * So the modern upstream transport turns each input request into a server->client request (fresh
 * id, delivered with the original request's id as `relatedUpstreamId`, so the router asks the
 * right client), collects the client's answers in an `InputRound`, and then sends the original
 * request again with them. These are the pure parts of that: reading the result, shaping the
 * requests for a legacy client, and building the retry's params.
 */

import { isObject } from '../../../protocol/jsonrpc/json-object.js';
import type { JsonObject, JsonRpcRequest, RequestId } from '../../../protocol/jsonrpc/types.js';

/** One request the server needs answered before it can complete. */
export interface InputRequest {
  /** The server's key for it; the answer goes under the same key. */
  readonly key: string;
  readonly method: string;
  readonly params?: JsonObject;
}

/** What an `InputRequiredResult` asks for, or why it cannot be used. */
export type InputRequired =
  | { readonly ok: true; readonly requests: readonly InputRequest[]; readonly requestState?: string }
  | { readonly ok: false; readonly reason: string };

/** Whether a result is an `InputRequiredResult`. */
export function isInputRequired(result: unknown): result is JsonObject {
  return isObject(result) && result.resultType === 'input_required';
}

/** Reads an `InputRequiredResult`: its input requests (in the server's order) and state. */
export function readInputRequired(result: JsonObject): InputRequired {
  const requests: InputRequest[] = [];
  const raw = result.inputRequests;
  if (raw !== undefined && !isObject(raw)) return { ok: false, reason: 'inputRequests is not an object' };
  for (const [key, value] of Object.entries(raw ?? {})) {
    if (!isObject(value) || typeof value.method !== 'string')
      return { ok: false, reason: `input request ${JSON.stringify(key)} has no method` };
    if (value.params !== undefined && !isObject(value.params))
      return { ok: false, reason: `input request ${JSON.stringify(key)} has params that are not an object` };
    requests.push(
      value.params === undefined
        ? { key, method: value.method }
        : { key, method: value.method, params: value.params },
    );
  }
  const state = result.requestState;
  if (state !== undefined && typeof state !== 'string')
    return { ok: false, reason: 'requestState is not a string' };
  if (requests.length === 0 && state === undefined)
    return { ok: false, reason: 'it has neither inputRequests nor requestState' };
  return state === undefined ? { ok: true, requests } : { ok: true, requests, requestState: state };
}

/**
 * The server->client request a legacy client is sent for `input`. A URL-mode elicitation gets the
 * `elicitationId` that 2025-11-25 requires and 2026-07-28 dropped (the bridge id: unique enough, and
 * no completion notification will ever refer to it).
 */
export function legacyInputRequest(id: RequestId, input: InputRequest): JsonRpcRequest {
  let params = input.params;
  if (
    input.method === 'elicitation/create' &&
    params?.mode === 'url' &&
    typeof params.elicitationId !== 'string'
  )
    params = { ...params, elicitationId: String(id) };
  return params === undefined
    ? { jsonrpc: '2.0', id, method: input.method }
    : { jsonrpc: '2.0', id, method: input.method, params };
}

/**
 * The params of the retry: the original params with this round's `inputResponses` and the state,
 * replacing those of any earlier round. Without a state in the result, none is sent (MRTR: MUST NOT).
 */
export function retryParams(original: JsonObject, responses: JsonObject, requestState?: string): JsonObject {
  const params: JsonObject = { ...original };
  delete params.inputResponses;
  delete params.requestState;
  if (Object.keys(responses).length > 0) params.inputResponses = responses;
  if (requestState !== undefined) params.requestState = requestState;
  return params;
}

/** One round of input: the bridged requests still waiting for the client, and the answers so far. */
export class InputRound {
  readonly requestState: string | undefined;
  readonly responses: JsonObject = {};
  /** Bridge id key (`idKey`) to the input request it stands for. */
  readonly #waiting = new Map<string, InputRequest & { readonly id: RequestId }>();

  constructor(requestState: string | undefined) {
    this.requestState = requestState;
  }

  /** Registers the bridge request `id` (its `idKey` is `key`) for `input`. */
  add(key: string, id: RequestId, input: InputRequest): void {
    this.#waiting.set(key, { ...input, id });
  }

  /** The input request the bridge id key stands for, if still waiting. */
  get(key: string): (InputRequest & { readonly id: RequestId }) | undefined {
    return this.#waiting.get(key);
  }

  /** Records the client's result for a waiting request; true once nothing is waiting any more. */
  answer(key: string, result: unknown): boolean {
    const input = this.#waiting.get(key);
    if (!input) return false;
    this.#waiting.delete(key);
    this.responses[input.key] = result;
    return this.#waiting.size === 0;
  }

  /** Stops waiting for a request (its answer was an error, handled by the caller). */
  remove(key: string): void {
    this.#waiting.delete(key);
  }

  /** The bridge ids still waiting (to cancel them toward the client), emptying the round. */
  drain(): { readonly key: string; readonly id: RequestId }[] {
    const out = [...this.#waiting.entries()].map(([key, input]) => ({ key, id: input.id }));
    this.#waiting.clear();
    return out;
  }
}
