/**
 * Ambient per-request correlation ids (ADR-0038), the Node counterpart of the Python contextvars in
 * praxis: the transport opens a scope around the dispatch of one request, and the audited path
 * reads the ids when it builds the record. The ids are request-scoped, not tool inputs, so no tool
 * signature carries them. AsyncLocalStorage keeps each async task's scope separate, so concurrent
 * requests never see each other's ids, and the scope ends when the callback's work does.
 *
 * The audit record writer itself stays pure (explicit parameters); only its caller reads the scope.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { boundId } from './bound-id.js';

/** The ids of the request being handled; each is bounded by `boundId`, absent means unknown. */
export interface RequestScope {
  readonly requestId: string | undefined;
  readonly clientId: string | undefined;
  /** The peer's network address (the HTTP client's socket), for `client.address` in OpenTelemetry. */
  readonly clientAddress?: string | undefined;
}

/**
 * Ids for {@link runInRequestScope}, as received (any type; they pass through `boundId`). A field
 * that is `undefined` or missing is inherited from the enclosing scope, so a connection-level scope
 * can set `clientId` once and per-request scopes inside it set `requestId`; `null` clears it.
 */
export interface RequestScopeInput {
  readonly requestId?: unknown;
  readonly clientId?: unknown;
  /** The peer's address (inherited like the ids when undefined). */
  readonly clientAddress?: string | undefined;
}

const storage = new AsyncLocalStorage<RequestScope>();

/**
 * Runs `fn` with the given ids as the current request scope and returns its result (a promise
 * stays in the scope until it settles, as do the callbacks it schedules). Outside `fn` the previous
 * scope, or none, is current again.
 */
export function runInRequestScope<T>(ids: RequestScopeInput, fn: () => T): T {
  const outer = storage.getStore();
  const scope: RequestScope = Object.freeze({
    requestId: ids.requestId === undefined ? outer?.requestId : boundId(ids.requestId),
    clientId: ids.clientId === undefined ? outer?.clientId : boundId(ids.clientId),
    clientAddress: ids.clientAddress ?? outer?.clientAddress,
  });
  return storage.run(scope, fn);
}

/** The current scope, or `undefined` outside any {@link runInRequestScope}. */
export function currentRequestScope(): RequestScope | undefined {
  return storage.getStore();
}

/** The current request id, or `undefined` (no scope, or the scope has none). */
export function currentRequestId(): string | undefined {
  return storage.getStore()?.requestId;
}

/** The current client id, or `undefined` (no scope, or the scope has none). */
export function currentClientId(): string | undefined {
  return storage.getStore()?.clientId;
}
