import { describe, expect, it } from 'vitest';
import type { JsonRpcRequest } from '../protocol/jsonrpc/types.js';
import {
  type AttributableTag,
  attributeServerRequest,
  type BlockingTag,
  type ServerRequestOrigin,
} from './attribution.js';
import { CorrelationTable } from './correlation-table.js';
import { INTERNAL_SESSION } from './session-key.js';

type Table = CorrelationTable<AttributableTag, BlockingTag>;

function call(table: Table, session: string, id: number, link = 'L', tag: AttributableTag = {}) {
  const opened = table.openClientRequest({
    session,
    downstreamId: id,
    link,
    method: 'tools/call',
    now: 0,
    tag,
  });
  if (!opened.ok) throw new Error('duplicate');
  return opened.entry;
}

function origin(over: Partial<ServerRequestOrigin> = {}): ServerRequestOrigin {
  return { link: 'L', sessionsUsingLink: () => [], ...over };
}

describe('attribution of server requests', () => {
  it('follows the request whose response stream carried it, unless that is the gateway’s own', () => {
    const table: Table = new CorrelationTable();
    const a = call(table, 'a', 1);
    call(table, 'b', 1);
    const own = call(table, INTERNAL_SESSION, 9, 'L', { internal: true });
    expect(attributeServerRequest(table, origin({ relatedUpstreamId: a.upstreamId }))).toEqual({
      session: 'a',
      parent: a,
    });
    // The gateway's own request does not decide; two sessions in flight leave it unattributed.
    expect(attributeServerRequest(table, origin({ relatedUpstreamId: own.upstreamId }))).toBeUndefined();
  });

  it('takes the one call in flight on the link, ignoring other links and the gateway’s own', () => {
    const table: Table = new CorrelationTable();
    const a = call(table, 'a', 1);
    call(table, 'b', 1, 'other');
    call(table, INTERNAL_SESSION, 2);
    expect(attributeServerRequest(table, origin())).toEqual({ session: 'a', parent: a });
  });

  it('skips a call already blocked on its own request to the client', () => {
    const table: Table = new CorrelationTable();
    const parked = call(table, 'a', 1);
    const free = call(table, 'b', 1);
    table.openServerRequest({
      link: 'L',
      upstreamId: 'q1',
      session: 'a',
      method: 'elicitation/create',
      now: 0,
      tag: { parentUpstreamId: parked.upstreamId },
    });
    expect(attributeServerRequest(table, origin())).toEqual({ session: 'b', parent: free });
  });

  it('names the session without a parent when its several calls are all candidates', () => {
    const table: Table = new CorrelationTable();
    call(table, 'a', 1);
    call(table, 'a', 2);
    expect(attributeServerRequest(table, origin())).toEqual({ session: 'a' });
  });

  it('leaves out calls the peer promised to ask nothing for', () => {
    const table: Table = new CorrelationTable();
    const request = (id: number, era: string): JsonRpcRequest => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { era },
    });
    call(table, 'modern', 1, 'L', { call: { request: request(1, 'modern') } });
    const legacy = call(table, 'legacy', 1, 'L', { call: { request: request(1, 'legacy') } });
    const asksNothingFor = (r: JsonRpcRequest) => (r.params as { era?: string }).era === 'modern';
    expect(attributeServerRequest(table, origin({ asksNothingFor }))).toEqual({
      session: 'legacy',
      parent: legacy,
    });
    expect(attributeServerRequest(table, origin())).toBeUndefined();
  });

  it('falls back to the one session using the link, and only then asks for it', () => {
    const table: Table = new CorrelationTable();
    let asked = 0;
    const using = (sessions: string[]) => () => {
      asked++;
      return sessions;
    };
    expect(attributeServerRequest(table, origin({ sessionsUsingLink: using(['a']) }))).toEqual({
      session: 'a',
    });
    expect(attributeServerRequest(table, origin({ sessionsUsingLink: using(['a', 'b']) }))).toBeUndefined();
    call(table, 'c', 1);
    expect(attributeServerRequest(table, origin({ sessionsUsingLink: using(['a']) }))?.session).toBe('c');
    expect(asked).toBe(2);
  });

  it('ignores a cancelled call', () => {
    const table: Table = new CorrelationTable();
    call(table, 'a', 1);
    table.cancelClientRequest('a', 1, 0);
    expect(attributeServerRequest(table, origin({ sessionsUsingLink: () => ['b'] }))).toEqual({
      session: 'b',
    });
  });
});
