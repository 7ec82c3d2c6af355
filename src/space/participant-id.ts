/**
 * Participant ids in the space. A participant authenticated by the gateway is its principal, so
 * the rule is as wide as a principal (a JWT `sub` such as `auth0|12345` included): 1 to 256
 * characters, no whitespace, no control characters. Ids the gateway gives its own participants
 * are reserved so that nobody can pose as them: `gateway`, `system` (and `system:*`, the MEW
 * gateway's name), `server-*` (an upstream MCP server) and `client-*` (an MCP client session).
 */

export const GATEWAY_ID = 'gateway';

const VALID = /^[^\s\p{Cc}]{1,256}$/u;

/** Why `id` cannot be a participant id, or undefined when it can. */
export function participantIdProblem(id: string): string | undefined {
  if (!VALID.test(id)) return 'a participant id is 1 to 256 characters without spaces or control characters';
  if (isReservedParticipantId(id))
    return `"${id.slice(0, 40)}" is reserved for the gateway's own participants (gateway, system, server-*, client-*)`;
  return undefined;
}

/** Whether `id` belongs to the gateway's own namespace (see the module comment). */
export function isReservedParticipantId(id: string): boolean {
  const lower = id.toLowerCase();
  return (
    lower === GATEWAY_ID ||
    lower === 'system' ||
    lower.startsWith('system:') ||
    lower.startsWith('server-') ||
    lower.startsWith('client-')
  );
}
