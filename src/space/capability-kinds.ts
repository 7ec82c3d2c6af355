/**
 * `capability/grant`, `capability/revoke` and `capability/grant-ack` (MEUP ADR-g7r, and the grant
 * flow of the MEW gateway): the gateway validates the sender (its capabilities must allow the
 * kind: only holders of a grant capability grant), stores what was granted under the grant's id,
 * delivers the envelope, and welcomes the recipient again with its new capabilities. The recipient
 * answers `capability/grant-ack` correlated to the grant (one ack may name several grants); the
 * gateway never sends an ack itself.
 *
 * Holding `capability/grant` is full trust unless its payload pattern narrows it: a granter may
 * give anything, to itself included. Narrow it in the configuration, e.g.
 * `{kind: capability/grant, payload: {recipient: "bot-*"}}`. `system/*` kinds stay refused
 * whatever is granted. Patterns in grants cannot hold regular expressions.
 */
import type { MeupEnvelope } from '../meup/types.js';
import { parseCapabilities } from './capability-pattern.js';
import { isReservedParticipantId } from './participant-id.js';
import type { SpaceConnection } from './space-connection.js';
import type { SpaceCore } from './space-core.js';
import { SpaceErrorCode } from './space-error-codes.js';

function recipientOf(
  core: SpaceCore,
  connection: SpaceConnection,
  envelope: MeupEnvelope,
): string | undefined {
  const recipient = envelope.payload.recipient;
  if (typeof recipient !== 'string' || recipient.length === 0) {
    core.reject(
      connection,
      envelope,
      SpaceErrorCode.InvalidPayload,
      'payload.recipient must name a participant',
    );
    return undefined;
  }
  if (isReservedParticipantId(recipient) || !core.participants.isKnown(recipient)) {
    core.reject(
      connection,
      envelope,
      SpaceErrorCode.UnknownParticipant,
      `payload.recipient ${JSON.stringify(recipient.slice(0, 64))} is not a participant of this space`,
      { participants: [recipient.slice(0, 256)] },
    );
    return undefined;
  }
  return recipient;
}

export function handleGrant(core: SpaceCore, connection: SpaceConnection, envelope: MeupEnvelope): void {
  const recipient = recipientOf(core, connection, envelope);
  if (recipient === undefined) return;
  const parsed = parseCapabilities(envelope.payload.capabilities, { allowRegex: false });
  if (!parsed.ok) {
    core.reject(
      connection,
      envelope,
      SpaceErrorCode.InvalidCapability,
      `payload.capabilities${parsed.error.path === '' ? '' : parsed.error.path}: ${parsed.error.problem}`,
    );
    return;
  }
  if (parsed.capabilities.length === 0) {
    core.reject(
      connection,
      envelope,
      SpaceErrorCode.InvalidPayload,
      'payload.capabilities must list at least one',
    );
    return;
  }
  const grants = core.participants.grants;
  if (grants.has(envelope.id)) {
    core.reject(connection, envelope, SpaceErrorCode.DuplicateId, 'a grant with this id already exists');
    return;
  }
  if (grants.full) {
    core.reject(
      connection,
      envelope,
      SpaceErrorCode.InvalidPayload,
      'the space holds too many grants; revoke some',
    );
    return;
  }
  grants.add({
    id: envelope.id,
    recipient,
    granter: connection.participant,
    capabilities: parsed.capabilities,
  });
  core.route(connection, envelope);
  core.welcome(recipient);
}

export function handleRevoke(core: SpaceCore, connection: SpaceConnection, envelope: MeupEnvelope): void {
  const recipient = recipientOf(core, connection, envelope);
  if (recipient === undefined) return;
  const { grant_id: grantId, capabilities } = envelope.payload;
  if ((grantId === undefined) === (capabilities === undefined)) {
    core.reject(
      connection,
      envelope,
      SpaceErrorCode.InvalidPayload,
      'a revoke names either payload.grant_id or payload.capabilities',
    );
    return;
  }
  const grants = core.participants.grants;
  if (grantId !== undefined) {
    if (typeof grantId !== 'string' || !grants.revoke(recipient, grantId)) {
      core.reject(
        connection,
        envelope,
        SpaceErrorCode.UnknownGrant,
        `${recipient} holds no grant with this grant_id`,
      );
      return;
    }
  } else {
    const parsed = parseCapabilities(capabilities, { allowRegex: true });
    if (!parsed.ok) {
      core.reject(
        connection,
        envelope,
        SpaceErrorCode.InvalidCapability,
        `payload.capabilities${parsed.error.path}: ${parsed.error.problem}`,
      );
      return;
    }
    if (grants.revokeCapabilities(recipient, parsed.capabilities) === 0) {
      core.reject(
        connection,
        envelope,
        SpaceErrorCode.NothingToRevoke,
        `${recipient} holds none of these capabilities by grant (configured capabilities are not revocable)`,
      );
      return;
    }
  }
  core.route(connection, envelope);
  core.welcome(recipient);
}

/** Whether every grant a grant-ack names was given to its sender (it may then always be sent). */
export function acksOwnGrants(core: SpaceCore, envelope: MeupEnvelope): boolean {
  const ids = envelope.correlationId ?? [];
  return ids.length > 0 && ids.every((id) => core.participants.grants.get(id)?.recipient === envelope.from);
}

export function handleGrantAck(core: SpaceCore, connection: SpaceConnection, envelope: MeupEnvelope): void {
  const ids = envelope.correlationId ?? [];
  if (ids.length === 0) {
    core.reject(
      connection,
      envelope,
      SpaceErrorCode.InvalidCorrelation,
      'a capability/grant-ack names the grants it acknowledges in correlation_id',
    );
    return;
  }
  const notMine = ids.filter((id) => core.participants.grants.get(id)?.recipient !== connection.participant);
  if (notMine.length > 0) {
    core.reject(
      connection,
      envelope,
      SpaceErrorCode.InvalidCorrelation,
      'it names grants that were not given to you',
      { grants: notMine },
    );
    return;
  }
  for (const id of ids) {
    const grant = core.participants.grants.get(id);
    if (grant) grant.acknowledged = true;
  }
  core.route(connection, envelope);
}
