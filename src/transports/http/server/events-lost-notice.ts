/**
 * What a resuming client is told when events it asks for have left the event store: an MCP log
 * message (level warning, `data.code: SB_EVENTS_LOST`) it can surface, never a silent skip. Sent
 * without an event id, so it is not itself something to resume from.
 */
export function eventsLostNotice(lastEventId: string): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    method: 'notifications/message',
    params: {
      level: 'warning',
      logger: 'switchboard',
      data: {
        code: 'SB_EVENTS_LOST',
        message: 'some events after Last-Event-ID are no longer kept by the gateway and cannot be replayed',
        lastEventId,
      },
    },
  });
}
