/**
 * The MCP kinds in the space: `mcp/request` (to a server participant: executed through the
 * router as the sender; naming proposals in `correlation_id`: a fulfilment), `mcp/proposal`,
 * `mcp/reject` (holders of the capability) and `mcp/withdraw` (the proposer only). An envelope
 * that names several proposals acts on all of them, or, if any of them cannot be acted on, on none
 * (the refusal names the offending ones).
 */
import { newEnvelopeId } from '../meup/ids.js';
import { MEUP_PROTOCOL, type MeupEnvelope } from '../meup/types.js';
import { isObject } from '../protocol/jsonrpc/json-object.js';
import type { JsonObject, JsonRpcResponse, RequestId } from '../protocol/jsonrpc/types.js';
import { gatewayMetaKeys, reservedMetaError } from '../protocol/mcp/reserved-meta.js';
import type { Proposal } from './proposals.js';
import type { SpaceConnection } from './space-connection.js';
import type { SpaceCore } from './space-core.js';
import { SpaceErrorCode } from './space-error-codes.js';

/** The proposals an envelope names, sorted by what can be done with them. */
interface Named {
  readonly open: Proposal[];
  readonly closed: string[];
  readonly unknown: string[];
}

function named(core: SpaceCore, ids: readonly string[] | undefined): Named {
  const out: Named = { open: [], closed: [], unknown: [] };
  for (const id of ids ?? []) {
    const proposal = core.proposals.get(id);
    if (!proposal) out.unknown.push(id);
    else if (proposal.state === 'open') out.open.push(proposal);
    else out.closed.push(id);
  }
  return out;
}

function reasonOf(payload: Readonly<Record<string, unknown>>): string | undefined {
  return typeof payload.reason === 'string' ? payload.reason.slice(0, 500) : undefined;
}

/** The tool or prompt name, or the resource URI, a request acts on. */
function targetOf(params: unknown): string | undefined {
  if (!isObject(params)) return undefined;
  if (typeof params.name === 'string') return params.name;
  return typeof params.uri === 'string' ? params.uri : undefined;
}

/** `mcp/response` (or `mcp/notification`) from a server participant about a request. */
function fromServer(
  upstream: string,
  kind: 'mcp/response' | 'mcp/notification',
  to: readonly string[],
  correlation: readonly string[],
  context: string | undefined,
  payload: Record<string, unknown>,
): MeupEnvelope {
  return {
    protocol: MEUP_PROTOCOL,
    id: newEnvelopeId(),
    ts: new Date().toISOString(),
    from: `server-${upstream}`,
    to,
    kind,
    correlationId: correlation,
    ...(context === undefined ? {} : { context }),
    payload,
  };
}

export function handleMcpRequest(core: SpaceCore, connection: SpaceConnection, envelope: MeupEnvelope): void {
  const to = envelope.to ?? [];
  const servers = to.filter((id) => core.participants.serverOf(id) !== undefined);
  const proposals = named(core, envelope.correlationId);
  if (proposals.closed.length > 0) {
    core.reject(
      connection,
      envelope,
      SpaceErrorCode.ProposalClosed,
      'a proposal it fulfils is already closed',
      {
        proposals: proposals.closed,
      },
    );
    return;
  }
  if (servers.length === 0) {
    if (proposals.open.length > 0) {
      core.reject(
        connection,
        envelope,
        SpaceErrorCode.InvalidTarget,
        'a fulfilment goes to the server participant that runs it: to: ["server-<name>"]',
      );
      return;
    }
    core.route(connection, envelope);
    return;
  }
  if (to.length > 1) {
    core.reject(
      connection,
      envelope,
      SpaceErrorCode.InvalidTarget,
      'an mcp/request to a server participant names that server alone in to',
    );
    return;
  }
  const upstream = core.participants.serverOf(servers[0]!)!;
  const payload = envelope.payload;
  const method = payload.method as string;
  if (payload.params !== undefined && !isObject(payload.params)) {
    core.reject(connection, envelope, SpaceErrorCode.InvalidPayload, 'payload.params must be an object');
    return;
  }
  if (payload.jsonrpc !== undefined && payload.jsonrpc !== '2.0') {
    core.reject(connection, envelope, SpaceErrorCode.InvalidPayload, 'payload.jsonrpc must be "2.0"');
    return;
  }
  const rpcId = payload.id;
  if (
    rpcId !== undefined &&
    typeof rpcId !== 'string' &&
    !(typeof rpcId === 'number' && Number.isFinite(rpcId))
  ) {
    core.reject(
      connection,
      envelope,
      SpaceErrorCode.InvalidPayload,
      'payload.id must be a string or a number',
    );
    return;
  }
  if (method === 'initialize' || method.startsWith('notifications/')) {
    core.reject(
      connection,
      envelope,
      SpaceErrorCode.UnsupportedMethod,
      `${method} is not sent upstream from the space (the gateway owns the MCP handshake; mcp/request carries requests)`,
    );
    return;
  }
  // As on every client transport (transports/client-meta.ts): the gateway's own `_meta` namespace
  // instructs its upstream transports, and a participant may not write in it.
  const reserved = gatewayMetaKeys({ jsonrpc: '2.0', id: 0, method, params: payload.params as JsonObject });
  if (reserved.length > 0) {
    core.reject(
      connection,
      envelope,
      SpaceErrorCode.InvalidPayload,
      `payload.params: ${reservedMetaError(reserved).message}`,
    );
    return;
  }
  const clientId: RequestId = (rpcId as RequestId | undefined) ?? envelope.id;
  const held = proposals.open.filter((p) => p.approval !== undefined);
  if (held.length > 0) {
    fulfilHeldCalls(core, connection, envelope, held, proposals.open, upstream, clientId);
    return;
  }
  if (!core.mcp) {
    core.reject(connection, envelope, SpaceErrorCode.Internal, 'MCP calls are not available in this space');
    return;
  }
  const mcp = core.mcp;
  for (const p of proposals.open) core.proposals.close(p.id, 'fulfilled', envelope.id);
  const proposers = [...new Set(proposals.open.map((p) => p.proposer))];
  const answerTo = [...new Set([connection.participant, ...proposers])];
  const sessionKey = mcp.sessionKey(connection.participant, connection.roles, upstream);
  // The proposers receive the fulfilling request itself, not only its response: a proposer links
  // the response (correlated to the request) to its proposal through the request that names the
  // proposal (MEW v0.4 section 3.2.1; the reference client's MEWParticipant does exactly this).
  core.route(connection, envelope, { traceSession: sessionKey, alsoTo: proposers });
  mcp.call({
    participant: connection.participant,
    roles: connection.roles,
    upstream,
    method,
    ...(isObject(payload.params) ? { params: payload.params as JsonObject } : {}),
    clientId,
    envelopeId: envelope.id,
    onResponse: (response, traceId) =>
      core.publish(
        fromServer(
          upstream,
          'mcp/response',
          answerTo,
          traceId === undefined ? [envelope.id] : [envelope.id, traceId],
          envelope.context,
          response as unknown as Record<string, unknown>,
        ),
        { traceSession: sessionKey },
      ),
    onNotification: (notification) =>
      core.publish(
        fromServer(
          upstream,
          'mcp/notification',
          [connection.participant],
          [envelope.id],
          envelope.context,
          notification as unknown as Record<string, unknown>,
        ),
        { traceSession: sessionKey },
      ),
  });
}

/**
 * A fulfilment of calls held for approval: each is approved by the sender (an approver), runs as
 * its MCP client asked, and its result comes back to the sender as the response to this request.
 */
function fulfilHeldCalls(
  core: SpaceCore,
  connection: SpaceConnection,
  envelope: MeupEnvelope,
  held: readonly Proposal[],
  open: readonly Proposal[],
  upstream: string,
  clientId: RequestId,
): void {
  if (held.length !== open.length) {
    core.reject(
      connection,
      envelope,
      SpaceErrorCode.InvalidCorrelation,
      "a fulfilment names either calls held for approval or participants' proposals, not both",
    );
    return;
  }
  if (!core.approvals) {
    core.reject(connection, envelope, SpaceErrorCode.Internal, 'approvals are not available in this space');
    return;
  }
  if (!core.isApprover(connection)) {
    core.reject(
      connection,
      envelope,
      SpaceErrorCode.NotApprover,
      'deciding a held call needs an approver role (policy.approvals.approverRoles)',
    );
    return;
  }
  const method = envelope.payload.method;
  const target = targetOf(envelope.payload.params);
  const mismatched = held.filter(
    (p) => p.approval!.upstream !== upstream || p.method !== method || p.approval!.target !== target,
  );
  if (mismatched.length > 0) {
    core.reject(
      connection,
      envelope,
      SpaceErrorCode.ProposalMismatch,
      'the fulfilment is not the held call: it must go to the same server with the same method and name (or uri)',
      { proposals: mismatched.map((p) => p.id) },
    );
    return;
  }
  const approvals = core.approvals;
  const own = held.filter((p) => approvals.isSelfApproval(p.id, connection.participant));
  if (own.length > 0) {
    core.reject(
      connection,
      envelope,
      SpaceErrorCode.SelfApproval,
      `${connection.participant} made this call and may not approve it itself: another approver must (four eyes; policy.approvals.allowSelfApproval allows it)`,
      { proposals: own.map((p) => p.id) },
    );
    return;
  }
  const traceSession = held[0]!.approval!.session;
  core.route(connection, envelope, { traceSession });
  for (const proposal of held) {
    approvals.decide(proposal, { approve: true, by: connection.participant }, envelope.id, {
      approvalId: proposal.id,
      onResult: (response: JsonRpcResponse, traceId: string) =>
        core.publish(
          fromServer(
            upstream,
            'mcp/response',
            [connection.participant],
            [envelope.id, traceId],
            envelope.context,
            { ...response, id: clientId } as unknown as Record<string, unknown>,
          ),
          { traceSession: proposal.approval!.session },
        ),
    });
  }
}

export function handleMcpProposal(
  core: SpaceCore,
  connection: SpaceConnection,
  envelope: MeupEnvelope,
): void {
  if (core.proposals.has(envelope.id)) {
    core.reject(
      connection,
      envelope,
      SpaceErrorCode.DuplicateId,
      'a proposal with this id is already tracked',
    );
    return;
  }
  core.proposals.add({
    id: envelope.id,
    proposer: connection.participant,
    method: envelope.payload.method as string,
    params: envelope.payload.params,
  });
  core.route(connection, envelope, { broadcastIfVirtual: true });
}

export function handleMcpReject(core: SpaceCore, connection: SpaceConnection, envelope: MeupEnvelope): void {
  const proposals = named(core, envelope.correlationId);
  if (proposals.unknown.length > 0) {
    core.reject(
      connection,
      envelope,
      SpaceErrorCode.UnknownProposal,
      'it names proposals the space does not know',
      {
        proposals: proposals.unknown,
      },
    );
    return;
  }
  if (proposals.closed.length > 0) {
    core.reject(connection, envelope, SpaceErrorCode.ProposalClosed, 'it names proposals already closed', {
      proposals: proposals.closed,
    });
    return;
  }
  const held = proposals.open.filter((p) => p.approval !== undefined);
  if (held.length > 0 && !core.isApprover(connection)) {
    core.reject(
      connection,
      envelope,
      SpaceErrorCode.NotApprover,
      'rejecting a held call needs an approver role (policy.approvals.approverRoles)',
    );
    return;
  }
  if (held.length > 0 && !core.approvals) {
    core.reject(connection, envelope, SpaceErrorCode.Internal, 'approvals are not available in this space');
    return;
  }
  core.route(connection, envelope, { traceSession: held[0]?.approval?.session });
  const reason = reasonOf(envelope.payload);
  for (const proposal of proposals.open) {
    if (proposal.approval === undefined) core.proposals.close(proposal.id, 'rejected', envelope.id);
    else
      core.approvals!.decide(
        proposal,
        { approve: false, by: connection.participant, ...(reason === undefined ? {} : { reason }) },
        envelope.id,
      );
  }
}

export function handleMcpWithdraw(
  core: SpaceCore,
  connection: SpaceConnection,
  envelope: MeupEnvelope,
): void {
  const proposals = named(core, envelope.correlationId);
  if (proposals.unknown.length > 0) {
    core.reject(
      connection,
      envelope,
      SpaceErrorCode.UnknownProposal,
      'it names proposals the space does not know',
      {
        proposals: proposals.unknown,
      },
    );
    return;
  }
  const others = proposals.open.filter((p) => p.proposer !== connection.participant);
  if (others.length > 0) {
    core.reject(
      connection,
      envelope,
      SpaceErrorCode.NotProposer,
      'only the proposer may withdraw a proposal',
      {
        proposals: others.map((p) => p.id),
      },
    );
    return;
  }
  if (proposals.closed.length > 0) {
    core.reject(connection, envelope, SpaceErrorCode.ProposalClosed, 'it names proposals already closed', {
      proposals: proposals.closed,
    });
    return;
  }
  for (const proposal of proposals.open) core.proposals.close(proposal.id, 'withdrawn', envelope.id);
  core.route(connection, envelope);
}
