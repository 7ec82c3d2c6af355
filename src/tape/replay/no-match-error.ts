/**
 * The error a replayed request gets when the tape holds no answer for it: `SB_TAPE_NO_MATCH`
 * (-32011), whose message says what the closest recorded request is and where it differs, so the
 * person whose test failed sees the cause without opening the tape. `data` carries the same facts
 * as values, for tools.
 */

import { SbErrorCode } from '../../errors/switchboard-error.js';
import { gatewayError } from '../../errors/to-jsonrpc-error.js';
import type { JsonRpcErrorObject } from '../../protocol/jsonrpc/types.js';
import { describeDifference } from './json-path-diff.js';
import type { MatchMode, MatchOutcome } from './tape-matcher.js';

const REASON_TEXT = {
  'not-recorded': 'the tape holds no such request',
  'out-of-order': 'the tape holds it later (mode strict answers in recorded order)',
  'used-up': 'every identical recorded request has been answered (mode match answers each once)',
} as const;

/** The JSON-RPC error for a miss of request `method`, in `mode`. */
export function noMatchError(
  method: string,
  mode: MatchMode,
  miss: Extract<MatchOutcome, { kind: 'miss' }>,
): JsonRpcErrorObject {
  const closest = miss.closest;
  let text = `tape replay: no recorded answer for ${method}: ${REASON_TEXT[miss.reason]}`;
  if (closest === undefined) text += '; the tape holds no requests';
  else {
    text += `; closest recorded request: #${closest.seq} ${closest.method}`;
    if (closest.method !== method) text += ` (another method)`;
    if (closest.differences.length > 0)
      text += `, differs at ${closest.differences.map(describeDifference).join('; ')}`;
    else if (closest.method === method) text += ', identical';
  }
  return gatewayError(SbErrorCode.TapeNoMatch, text, {
    mode,
    reason: miss.reason,
    method,
    ...(closest ? { closest } : {}),
  });
}
