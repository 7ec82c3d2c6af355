/**
 * Which way a message flows. Direction drives routing: the gateway forwards `client->server`
 * messages upstream and `server->client` messages downstream, and never guesses from the method.
 */
export type Direction = 'client->server' | 'server->client' | 'internal' | 'unknown';

export const DIRECTIONS: readonly Direction[] = ['client->server', 'server->client', 'internal', 'unknown'];

/** The direction an answer travels in: responses inherit the reverse of their request's direction. */
export function reverseDirection(direction: Direction): Direction {
  if (direction === 'client->server') return 'server->client';
  if (direction === 'server->client') return 'client->server';
  return direction;
}

export function shouldForwardToServer(direction: Direction): boolean {
  return direction === 'client->server';
}

export function shouldSendToClient(direction: Direction): boolean {
  return direction === 'server->client';
}
