import { isObject } from '../protocol/jsonrpc/json-object.js';
/**
 * The MEW reference client's handshake (meup.md §2): its first frame is not an envelope but
 * `{type: "join", space, token, participantId, capabilities}`. The MEUP specification leaves
 * joining to implementations, so this is what the space accepts besides credentials on the
 * upgrade request:
 *
 * - `token` (optional): a bearer token, checked like `Authorization: Bearer`;
 * - `participantId` (optional): must equal the identity the token gives; without authentication
 *   configured (loopback only) it chooses the participant id;
 * - `space` (optional): must name this space;
 * - `capabilities` (optional): ignored. Capabilities come from the configuration (and grants),
 *   never from the participant's own claim;
 * - `protocol` (optional, an extension): the dialect the gateway answers in; default `mew/v0.4`.
 */

export interface JoinFrame {
  readonly space?: string;
  readonly token?: string;
  readonly participantId?: string;
  readonly protocol?: string;
}

export type JoinParse =
  | { readonly kind: 'join'; readonly join: JoinFrame }
  | { readonly kind: 'invalid'; readonly message: string }
  /** Not a join frame at all (an envelope, or anything else). */
  | { readonly kind: 'other' };

const STRING_FIELDS = ['space', 'token', 'participantId', 'protocol'] as const;

/** Whether a parsed frame is a join frame, and if so whether its fields have the right types. */
export function readJoinFrame(value: unknown): JoinParse {
  if (!isObject(value) || value.type !== 'join') return { kind: 'other' };
  const join: { -readonly [K in keyof JoinFrame]: JoinFrame[K] } = {};
  for (const field of STRING_FIELDS) {
    const v = value[field];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'string' || v.length > 8192)
      return { kind: 'invalid', message: `join.${field} must be a string` };
    if (v.length > 0) join[field] = v;
  }
  if (value.capabilities !== undefined && !Array.isArray(value.capabilities))
    return {
      kind: 'invalid',
      message: 'join.capabilities must be a list (it is ignored: capabilities come from the configuration)',
    };
  return { kind: 'join', join };
}
