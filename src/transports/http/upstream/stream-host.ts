/**
 * What the SSE stream readers of the Streamable HTTP transport (a request's answer stream, the
 * standalone GET stream) need from the transport that owns them. Keeping it this narrow lets each
 * stream live in its own small module and be reasoned about on its own.
 */
import type { Dispatcher } from 'undici';
import type { JsonRpcMessage } from '../../../protocol/jsonrpc/types.js';
import type { HttpConnection } from './http-connection.js';
import type { ResolvedHttpUpstreamOptions } from './http-upstream-options.js';
import type { UpstreamOutlet } from './upstream-outlet.js';

/** The transport's side of its streams (see the file comment). */
export interface StreamHost {
  readonly options: ResolvedHttpUpstreamOptions;
  readonly http: HttpConnection;
  readonly out: UpstreamOutlet;
  /** GETs the endpoint as an SSE stream, with `Last-Event-ID` unless it is empty. */
  get(lastEventId: string): Promise<Dispatcher.ResponseData>;
  /** Whether requests carry a session id (a 404 then means the session is gone). */
  hasSession(): boolean;
  /** The session is gone: the transport closes. */
  expired(): void;
  /** Sends a message upstream (e.g. the error answering an oversized server request). */
  send(json: string, message: JsonRpcMessage): void;
  /** Logs and counts a message too large to accept. */
  countOversized(bytes: number): void;
}
