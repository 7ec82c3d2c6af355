/**
 * Whether an upstream that answered `server/discover` also takes the 2025 handshake: one
 * `initialize` POST, as a 2025-11-25 client sends it (no session id, no `MCP-Protocol-Version`), and
 * then, when the server opened a session for it, one DELETE that ends that session again.
 *
 * The discover result cannot always tell: a server whose 2026-07-28 handler is separate from its
 * 2025 one (the v2 SDK's `createMcpHandler` beside a sessionful transport, the conformance suite's
 * reference server) lists only `2026-07-28` in `supportedVersions` and still serves `initialize`.
 * A server that speaks both eras must be spoken to in each client's era (`dual-era-transport.ts`),
 * so the probe asks.
 *
 * Accepted means: a 2xx answer carrying an `InitializeResult` whose `protocolVersion` is a legacy
 * revision. Anything else (a modern-only server's 400 with -32022, a 404, a network failure, a
 * timeout) is "not accepted": the server was found modern already, and it stays modern.
 */
import type { Dispatcher } from 'undici';
import { isObject } from '../../../protocol/jsonrpc/json-object.js';
import type { JsonObject } from '../../../protocol/jsonrpc/types.js';
import { eraOf, isKnownRevision, LATEST_LEGACY_REVISION } from '../../../protocol/mcp/revisions.js';
import { describeNetworkError } from './describe-error.js';
import { HttpConnection } from './http-connection.js';
import { readProbeAnswer } from './modern-answer.js';
import { configuredHeaders, isValidSessionId, POST_ACCEPT } from './request-headers.js';

/** Where and how to ask. */
export interface HandshakeProbeOptions {
  readonly name: string;
  readonly url: URL;
  readonly headers?: Readonly<Record<string, string>>;
  /** The connections to use; never closed here. */
  readonly dispatcher: Dispatcher;
  readonly timeoutMs: number;
  /** Ends the question early (the transport that asked was closed): not accepted then. */
  readonly signal?: AbortSignal;
}

/** Whether `initialize` was accepted, and what that is based on (for logs and the verdict). */
export interface HandshakeVerdict {
  readonly accepted: boolean;
  readonly reason: string;
}

const PROBE_ID = 'switchboard-handshake-probe';

/** Sends one `initialize` (see the file comment); never rejects. */
export async function probeHandshake(options: HandshakeProbeOptions): Promise<HandshakeVerdict> {
  if (options.signal?.aborted) return { accepted: false, reason: 'initialize not sent: closed' };
  const signal = () =>
    options.signal
      ? AbortSignal.any([options.signal, AbortSignal.timeout(options.timeoutMs)])
      : AbortSignal.timeout(options.timeoutMs);
  const http = new HttpConnection(options.url, options.dispatcher);
  const path = options.url.pathname + options.url.search;
  const base = configuredHeaders(options.headers);
  const params: JsonObject = {
    protocolVersion: LATEST_LEGACY_REVISION,
    capabilities: {},
    clientInfo: { name: 'switchboard', version: '0' },
  };
  let response: Dispatcher.ResponseData;
  try {
    response = await http.request({
      method: 'POST',
      path,
      headers: { ...base, 'content-type': 'application/json', accept: POST_ACCEPT },
      body: JSON.stringify({ jsonrpc: '2.0', id: PROBE_ID, method: 'initialize', params }),
      headersTimeoutMs: options.timeoutMs,
      bodyTimeoutMs: options.timeoutMs,
      signal: signal(),
    });
  } catch (error) {
    return { accepted: false, reason: `initialize failed: ${describeNetworkError(error)}` };
  }
  const status = response.statusCode;
  const header = response.headers['mcp-session-id'];
  const sessionId = typeof header === 'string' && isValidSessionId(header) ? header : undefined;
  // Read the whole answer: an SSE body ends once the response is written (a 2025 server closes a
  // POST's stream after its response), and the session is ended only after.
  const answer = await readProbeAnswer(options.name, path, response, PROBE_ID);
  if (sessionId !== undefined) {
    // Leave nothing behind: the session was opened for this question only. Its outcome changes
    // nothing (a server may expire it on its own).
    await http
      .request({
        method: 'DELETE',
        path,
        headers: { ...base, 'mcp-session-id': sessionId },
        headersTimeoutMs: options.timeoutMs,
        bodyTimeoutMs: options.timeoutMs,
        signal: signal(),
      })
      .then((deleted) => deleted.body.dump())
      .catch(() => undefined);
  }
  if (status < 200 || status >= 300) return { accepted: false, reason: `initialize got HTTP ${status}` };
  if (answer.kind !== 'response' || !('result' in answer.response))
    return { accepted: false, reason: `initialize got HTTP ${status} without an initialize result` };
  const result = answer.response.result;
  const version = isObject(result) ? result.protocolVersion : undefined;
  if (!isKnownRevision(version) || eraOf(version) !== 'legacy')
    return { accepted: false, reason: `initialize got HTTP ${status} without a legacy protocolVersion` };
  return { accepted: true, reason: `initialize got HTTP ${status} with protocolVersion ${version}` };
}
