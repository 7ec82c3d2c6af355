/**
 * `space/history` (an extension): a participant that joins late asks the gateway for the recent
 * envelopes of a context subtree. Request payload: `{context?: string, limit?: integer}`. The
 * gateway answers the asking connection alone with `system/history` correlated to the request:
 * `{context?, envelopes: [wire envelopes, oldest first], truncated}`. Only what the participant
 * could have seen is returned, at most `limit` (default 100, at most `space.history.maxResults`),
 * and no more than fits in one frame of `space.maxFrameBytes` (`truncated` says when older ones
 * were left out). Neither the request nor the answer is delivered to anyone else or kept in the
 * history; the request is recorded in the trace.
 */
import { encodeMeupEnvelope } from '../meup/codec.js';
import { validateContext } from '../meup/context-path.js';
import type { MeupEnvelope, MeupWireEnvelope } from '../meup/types.js';
import type { SpaceConnection } from './space-connection.js';
import type { SpaceCore } from './space-core.js';
import { SpaceErrorCode } from './space-error-codes.js';
import { historyEnvelope } from './system-envelopes.js';

export const DEFAULT_HISTORY_LIMIT = 100;
/** Room left in the answer's frame for its own envelope fields. */
const FRAME_MARGIN = 4096;

export function handleHistory(
  core: SpaceCore,
  connection: SpaceConnection,
  envelope: MeupEnvelope,
  observer: boolean,
): void {
  const { context, limit } = envelope.payload;
  if (context !== undefined) {
    const issues = validateContext(context);
    if (issues.length > 0) {
      core.reject(
        connection,
        envelope,
        SpaceErrorCode.InvalidPayload,
        `payload.context: ${issues[0]!.message}`,
      );
      return;
    }
  }
  const max = core.limits.maxHistoryResults;
  if (
    limit !== undefined &&
    !(typeof limit === 'number' && Number.isInteger(limit) && limit >= 1 && limit <= max)
  ) {
    core.reject(
      connection,
      envelope,
      SpaceErrorCode.InvalidPayload,
      `payload.limit must be an integer from 1 to ${max}`,
    );
    return;
  }
  const found = core.history.query({
    viewer: connection.participant,
    observer,
    context: context as string | undefined,
    limit: (limit as number | undefined) ?? Math.min(DEFAULT_HISTORY_LIMIT, max),
  });
  // Newest first, while they fit in one frame; then back to oldest first.
  const budget = core.limits.maxFrameBytes - FRAME_MARGIN;
  const kept: MeupWireEnvelope[] = [];
  let bytes = 0;
  let truncated = found.truncated;
  for (let i = found.envelopes.length - 1; i >= 0; i--) {
    const wire = encodeMeupEnvelope(found.envelopes[i]!);
    const size = Buffer.byteLength(JSON.stringify(wire)) + 1;
    if (bytes + size > budget) {
      truncated = true;
      break;
    }
    bytes += size;
    kept.push(wire);
  }
  core.record(envelope);
  core.publish(
    historyEnvelope({
      to: connection.participant,
      requestId: envelope.id,
      context: context as string | undefined,
      envelopes: kept.reverse(),
      truncated,
    }),
    { only: [connection], history: false, trace: false },
  );
}
