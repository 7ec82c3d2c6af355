/**
 * The link registry on its own: what waits for a starting link, what a full queue does, how
 * `whenReady` answers across restarts and closes, and what is traced. The transports are in-memory
 * recorders of what they were handed (the registry's port toward a peer); the logger and counters
 * are the real ones.
 */
import { describe, expect, it } from 'vitest';
import { MemoryLogger } from '../observe/logger.js';
import { Metrics } from '../observe/metrics.js';
import type { JsonRpcErrorObject, JsonRpcMessage, RequestId } from '../protocol/jsonrpc/types.js';
import type { Wire } from '../protocol/mcp/reserved-meta.js';
import { type Link, LinkRegistry } from './links.js';
import type { UpstreamTransport } from './ports.js';
import type { HopFields } from './taps.js';

class Recorder implements UpstreamTransport {
  readonly sent: JsonRpcMessage[] = [];
  fail = false;
  rewrite?: (message: JsonRpcMessage) => Wire;
  async start(): Promise<void> {}
  async close(): Promise<void> {}
  send(json: string, message: JsonRpcMessage): Wire | undefined {
    if (this.fail) throw new Error('pipe closed');
    this.sent.push(JSON.parse(json) as JsonRpcMessage);
    return this.rewrite?.(message);
  }
}

function setup(maxQueued = 10) {
  const hops: HopFields[] = [];
  const unsent: { link: string; id: RequestId; error: JsonRpcErrorObject }[] = [];
  const metrics = new Metrics();
  const links = new LinkRegistry({
    logger: new MemoryLogger(),
    metrics,
    maxQueued,
    hop: (fields) => hops.push(fields),
    unsent: (link, id, error) => unsent.push({ link: link.id, id, error }),
  });
  const attach = (state: 'ready' | 'starting' = 'ready', transport = new Recorder()) => ({
    transport,
    link: links.add({ id: 'L1', name: 'files', transport, transportContext: { kind: 'memory' }, state }),
  });
  return { links, hops, unsent, metrics, attach };
}

const trace = { id: 't1', session: undefined, correlation: [], context: 'gateway', receivedAt: 0 };
const request = (id: number): JsonRpcMessage => ({ jsonrpc: '2.0', id, method: 'tools/call' });
const send = (links: LinkRegistry, link: Link, message: JsonRpcMessage) => links.send(link, message, trace);

describe('LinkRegistry', () => {
  it('queues what is sent to a starting link and writes it in order once the link is ready', () => {
    const { links, attach, hops } = setup();
    const { link, transport } = attach('starting');
    expect(send(links, link, request(1))).toBe(true);
    expect(send(links, link, request(2))).toBe(true);
    expect(transport.sent).toEqual([]);
    expect(hops).toHaveLength(2); // traced as handed over, while they wait
    links.setReady('L1');
    expect(transport.sent.map((m) => (m as { id: number }).id)).toEqual([1, 2]);
    expect(links.get('L1')?.state).toBe('ready');
  });

  it('fails a request past the queue bound (and only requests), counting what it drops', () => {
    const { links, attach, unsent, metrics } = setup(1);
    const { link } = attach('starting');
    send(links, link, request(1));
    send(links, link, request(2));
    send(links, link, { jsonrpc: '2.0', method: 'notifications/progress' });
    expect(unsent.map((u) => u.id)).toEqual([2]);
    expect(unsent[0]?.error.message).toContain('restarting and its queue is full');
    expect(metrics.get('queued_dropped_total', { upstream: 'files' })).toBe(2);
  });

  it('keeps the queue for the connection attached after a restart, and drops it when the link goes down', () => {
    const { links, attach, metrics } = setup();
    const first = attach('starting');
    send(links, first.link, request(1));
    const second = attach('starting');
    links.setReady('L1');
    expect(second.transport.sent).toHaveLength(1);
    const third = links.closed('L1', { reason: 'exit 1' }, true);
    expect(third?.state).toBe('starting');
    send(links, second.link, request(2));
    links.discard(second.link);
    expect(metrics.get('queued_dropped_total', { upstream: 'files' })).toBe(1);
  });

  it('answers whenReady at once when ready, else on the next ready; a down link or a closed registry rejects', async () => {
    const { links, attach } = setup();
    const waitBefore = links.whenReady('L1'); // not attached yet: waited for too
    attach('starting');
    links.setReady('L1');
    await expect(waitBefore).resolves.toBeUndefined();
    await expect(links.whenReady('L1')).resolves.toBeUndefined();
    const link = links.closed('L1', { reason: 'crashed' }, true) as Link;
    const waitRestart = links.whenReady('L1');
    links.discard(link); // restarting: the wait goes on
    attach('starting');
    links.setReady('L1');
    await expect(waitRestart).resolves.toBeUndefined();
    const down = links.closed('L1', { reason: 'gave up' }, false) as Link;
    const waitDown = links.whenReady('L1');
    links.discard(down);
    await expect(links.whenReady('L1')).rejects.toMatchObject({
      message: 'upstream files is not available: gave up',
    });
    await expect(waitDown).rejects.toMatchObject({ message: 'upstream files is not available: gave up' });
    const other = setup();
    const pending = other.links.whenReady('L9');
    other.links.close();
    await expect(pending).rejects.toMatchObject({
      message: 'upstream L9 is not available: the gateway is closing',
    });
  });

  it('traces what went on the wire when the transport rewrote it, and reports a transport that throws', () => {
    const { links, attach, hops, metrics } = setup();
    const { link, transport } = attach();
    transport.rewrite = () => ({
      json: '{"jsonrpc":"2.0","id":1,"method":"x"}',
      message: { jsonrpc: '2.0', id: 1, method: 'x' },
    });
    send(links, link, request(1));
    expect(hops[0]).toMatchObject({
      message: { method: 'x' },
      payloadJson: '{"jsonrpc":"2.0","id":1,"method":"x"}',
    });
    transport.fail = true;
    expect(send(links, link, request(2))).toBe(false);
    expect(metrics.get('upstream_send_errors_total', { upstream: 'files' })).toBe(1);
    expect(hops).toHaveLength(1);
  });
});
