/**
 * The hop builders: one pure function per kind of hop the router records (docs/architecture.md,
 * "The flow"). Each works out the hop's direction, its `from` and `to`, its transport and the
 * session it is traced under, so the router says only what differs from one hop to the next.
 *
 * | builder          | direction      | from     | to       | transport                 |
 * | ---------------- | -------------- | -------- | -------- | ------------------------- |
 * | `clientInHop`    | client->server | client   | gateway  | the message's, as handed in |
 * | `toUpstreamHop`  | client->server | gateway  | upstream | the link's                |
 * | `fromUpstreamHop`| server->client | upstream | gateway  | the message's, as handed in |
 * | `toClientHop`    | server->client | gateway  | client   | the session's             |
 */

import type { TransportContext } from '../envelope/message-context.js';
import type { JsonRpcMessage } from '../protocol/jsonrpc/types.js';
import type { ProtocolVersion } from '../protocol/mcp/revisions.js';
import type { SessionKey } from './correlation-table.js';
import type { SessionState } from './ports.js';
import { INTERNAL_SESSION } from './session-key.js';
import type { HopFields, HopSession } from './taps.js';
import {
  clientParticipant,
  GATEWAY_PARTICIPANT,
  GATEWAY_TRACE_SESSION,
  serverParticipant,
} from './trace-mapping.js';

/** The client session a hop concerns, as the router keeps it. */
export interface HopSessionSource {
  /** The session key: the hop is traced under it. */
  readonly key: SessionKey;
  /** The client's `Mcp-Session-Id`, recorded on the hop when there is one. */
  readonly mcpSessionId?: string | undefined;
  /** The session's revision, recorded on the hop. */
  readonly protocolVersion: ProtocolVersion;
  /** Where the session is in its life, recorded on the hop. */
  readonly state: SessionState;
  /** The client transport's details, the hop's transport when it crosses the client edge. */
  readonly transportContext: TransportContext;
}

/** The link a hop crosses (`name`: its upstream's). */
export interface HopLink {
  /** The upstream's name: the hop's `server-<name>` participant and its `upstream`. */
  readonly name: string;
  /** The connection's details, the hop's transport when it crosses the upstream edge. */
  readonly transportContext: TransportContext;
}

/** What every hop carries, whatever its kind. */
export interface HopBase {
  /** The hop's trace id (its envelope id). */
  readonly id: string;
  /** The message that crossed (for a rewritten one, as it was written: ids as that side knows them). */
  readonly message: JsonRpcMessage;
  /** The hop's MEUP context path. */
  readonly context: string;
  /** When the message reached the gateway (monotonic milliseconds). */
  readonly receivedAt: number;
  /** The message's text as it went on the wire, when the router has it. */
  readonly raw: string | undefined;
  /** The envelope ids this hop answers or follows (its `correlation_id`), if any. */
  readonly correlation?: readonly string[] | undefined;
}

/**
 * The session a hop is traced under: the live session's key, else the key the correlation table
 * remembered (a session that has since ended), else `gateway` for the gateway's own traffic
 * ({@link INTERNAL_SESSION} in the table, {@link GATEWAY_TRACE_SESSION} in the trace).
 */
export function traceSessionOf(
  session: HopSessionSource | undefined,
  key: SessionKey | undefined,
): SessionKey {
  if (session) return session.key;
  return key !== undefined && key !== INTERNAL_SESSION ? key : GATEWAY_TRACE_SESSION;
}

function sessionContextOf(session: HopSessionSource | undefined): HopSession | undefined {
  return session
    ? {
        id: session.mcpSessionId ?? session.key,
        protocolVersion: session.protocolVersion,
        state: session.state,
      }
    : undefined;
}

/**
 * Every hop in one object literal, every key written out in one order: each hop then has the same
 * shape (one hidden class for the taps' reads) and costs one allocation. An object spread of the
 * common fields here cost about a third more CPU per call (bench/suites/ab.mjs, issue 20's note).
 */
function hop(
  base: HopBase,
  direction: HopFields['direction'],
  from: string,
  to: string,
  session: SessionKey,
  source: HopSessionSource | undefined,
  transport: TransportContext,
  upstream: string | undefined,
  sentAt: number | undefined,
  result?: ToClientResult,
): HopFields {
  const resultAt = result?.resultAt;
  return {
    id: base.id,
    message: base.message,
    context: base.context,
    receivedAt: base.receivedAt,
    payloadJson: base.raw,
    correlationId: base.correlation,
    direction,
    from,
    to,
    session,
    sessionContext: sessionContextOf(source),
    transport,
    upstream,
    sentAt,
    resultAt,
    resultIsError: resultAt === undefined ? undefined : result?.resultIsError === true,
  };
}

/** A client's message as it reached the gateway, on the transport it came by. */
export function clientInHop(
  session: HopSessionSource,
  transport: TransportContext,
  base: HopBase,
): HopFields {
  return hop(
    base,
    'client->server',
    clientParticipant(session.key),
    GATEWAY_PARTICIPANT,
    session.key,
    session,
    transport,
    undefined,
    undefined,
  );
}

/**
 * A message the gateway wrote to a link, on behalf of `session` (or of the session the
 * table remembers as `sessionKey`; neither for the gateway's own requests).
 */
export function toUpstreamHop(
  link: HopLink,
  session: HopSessionSource | undefined,
  sessionKey: SessionKey | undefined,
  base: HopBase,
  sentAt: number,
): HopFields {
  return hop(
    base,
    'client->server',
    GATEWAY_PARTICIPANT,
    serverParticipant(link.name),
    traceSessionOf(session, sessionKey),
    session,
    link.transportContext,
    link.name,
    sentAt,
  );
}

/**
 * An upstream's message as it reached the gateway, on the transport it came by, traced under the
 * session it concerns (or the one the table remembers as `sessionKey`; neither: the gateway's).
 */
export function fromUpstreamHop(
  upstream: string,
  transport: TransportContext,
  session: HopSessionSource | undefined,
  sessionKey: SessionKey | undefined,
  base: HopBase,
): HopFields {
  return hop(
    base,
    'server->client',
    serverParticipant(upstream),
    GATEWAY_PARTICIPANT,
    traceSessionOf(session, sessionKey),
    session,
    transport,
    upstream,
    undefined,
  );
}

/** For a call's final response: the upstream that answered it, and when its result was known. */
export interface ToClientResult {
  /** The name of the upstream that answered, if one did. */
  readonly upstream?: string | undefined;
  /** Where `JSON.stringify(result)` starts in the response's text (`HopEvent.resultAt`), when worked out. */
  readonly resultAt?: number | undefined;
  /** With `resultAt`: the result says `isError: true` (a tool's own failure). */
  readonly resultIsError?: boolean | undefined;
}

/** How a message the gateway sends to a client is traced (`toClientHop`'s base and result). */
export interface ToClientTrace extends ToClientResult {
  /** The hop's trace id. */
  readonly id: string;
  /** The envelope ids the hop answers or follows (its `correlation_id`). */
  readonly correlation: readonly string[];
  /** The hop's MEUP context path. */
  readonly context: string;
  /** When what caused it reached the gateway (monotonic milliseconds). */
  readonly receivedAt: number;
}

/** A message the gateway wrote to a client session, on the session's transport. */
export function toClientHop(
  session: HopSessionSource,
  base: HopBase,
  sentAt: number,
  result: ToClientResult,
): HopFields {
  return hop(
    base,
    'server->client',
    GATEWAY_PARTICIPANT,
    clientParticipant(session.key),
    session.key,
    session,
    session.transportContext,
    result.upstream,
    sentAt,
    result,
  );
}
