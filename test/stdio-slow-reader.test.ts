/**
 * `switchboard stdio` with a client that stops reading its stdout while the server floods it (issue
 * 18, item 4), and with one that never reads its stderr while the server floods its own stderr into
 * the gateway's log: the built CLI in front of `test/fixtures/flood-server.mjs`. The gateway must not
 * grow (its RSS, from /proc, stays within a generous bound while 64 MiB wait to be sent), must not
 * drop anything (the server is held back instead: it cannot finish writing while the client does
 * not read), and once the client reads, every notification arrives, in order.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CLI, ROOT, tempDir } from './support/cli.js';
import { rssBytes } from './support/proc-status.js';

const FLOOD_SERVER = join(ROOT, 'test/fixtures/flood-server.mjs');
const MiB = 1024 * 1024;
/** 2048 notifications of 32 KiB: 64 MiB, far beyond every buffer on the way. */
const COUNT = 2048;
const BYTES = 32 * 1024;
/** What the gateway may grow by while the client does not read: generous, far below the flood. */
const RSS_BOUND = 40 * MiB;

const running: ChildProcessWithoutNullStreams[] = [];
afterEach(() => {
  for (const child of running.splice(0)) child.kill('SIGKILL');
});

/**
 * The gateway as a client runs it, with a line reader on its stdout that can stop reading; with
 * `deafStderr`, nobody ever reads its stderr.
 */
function startGateway(deafStderr = false) {
  const child = spawn(
    process.execPath,
    [
      CLI,
      'stdio',
      '--data-dir',
      tempDir('switchboard-slow-stdio-'),
      '--no-trace',
      '--no-audit',
      '--log-level',
      'info',
      '--max-buffer-bytes',
      String(MiB),
      '--',
      process.execPath,
      FLOOD_SERVER,
    ],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
  running.push(child);
  const messages: Record<string, unknown>[] = [];
  let pending = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    pending += chunk.toString('utf8');
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) if (line.length > 0) messages.push(JSON.parse(line) as Record<string, unknown>);
  });
  if (deafStderr) child.stderr.pause();
  else
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
  const send = (message: unknown) => child.stdin.write(`${JSON.stringify(message)}\n`);
  return { child, messages, send, stderr: () => stderr };
}

describe('switchboard stdio with a client that stops reading', () => {
  it('holds the server back instead of buffering: bounded memory, nothing lost, everything in order once it reads', async () => {
    const gw = startGateway();
    gw.send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'slow', version: '1' } },
    });
    await vi.waitFor(() => expect(gw.messages).toHaveLength(1), { timeout: 30_000 });
    gw.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    const baseline = rssBytes(gw.child.pid!);

    gw.send({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'flood', arguments: { tag: 's', count: COUNT, bytes: BYTES } },
    });
    await vi.waitFor(() => expect(gw.messages.some((m) => m.id === 2)).toBe(true), { timeout: 30_000 });
    // The client stops reading its end of the pipe.
    gw.child.stdout.pause();

    // For three seconds the flood would run; the gateway's memory must stay flat meanwhile.
    let peak = baseline;
    for (let i = 0; i < 30; i++) {
      await new Promise((r) => setTimeout(r, 100));
      peak = Math.max(peak, rssBytes(gw.child.pid!));
    }
    console.log(
      `stdio gateway RSS: baseline ${(baseline / MiB).toFixed(1)} MiB, peak +${((peak - baseline) / MiB).toFixed(1)} MiB`,
    );
    expect(peak - baseline).toBeLessThan(RSS_BOUND);
    // The server is held back: it cannot have handed everything to its pipe.
    expect(gw.stderr()).not.toContain('flood s written');

    // The client reads again: every notification, in order, then the server finishes.
    gw.child.stdout.resume();
    const done = (m: Record<string, unknown>) =>
      (m.params as { data?: { done?: boolean } } | undefined)?.data?.done === true;
    await vi.waitFor(() => expect(gw.messages.some(done)).toBe(true), { timeout: 60_000 });
    const ns = gw.messages
      .filter((m) => m.method === 'notifications/message' && !done(m))
      .map((m) => (m.params as { data: { n: number } }).data.n);
    expect(ns).toEqual(Array.from({ length: COUNT }, (_v, i) => i));
    await vi.waitFor(() => expect(gw.stderr()).toContain('flood s written'), { timeout: 30_000 });
    // The pause was counted and logged.
    expect(gw.stderr()).toContain('the client is not reading stdout');
  });

  it('does not hold its log without end for a client that never reads its stderr', async () => {
    const gw = startGateway(true);
    gw.send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'deaf', version: '1' } },
    });
    await vi.waitFor(() => expect(gw.messages).toHaveLength(1), { timeout: 30_000 });
    gw.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    const baseline = rssBytes(gw.child.pid!);
    // 192 MiB of server stderr, each line relayed into the gateway's log (info).
    gw.send({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'shout', arguments: { count: 192 * 1024, bytes: 1024 } },
    });
    let peak = baseline;
    const shouted = () =>
      gw.messages.some(
        (m) => (m.params as { data?: { shout?: string } } | undefined)?.data?.shout === 'done',
      );
    while (!shouted()) {
      await new Promise((r) => setTimeout(r, 100));
      peak = Math.max(peak, rssBytes(gw.child.pid!));
    }
    peak = Math.max(peak, rssBytes(gw.child.pid!));
    console.log(
      `stdio gateway RSS with stderr unread: baseline ${(baseline / MiB).toFixed(1)} MiB, peak +${((peak - baseline) / MiB).toFixed(1)} MiB`,
    );
    // Measured: about +30 MiB (allocation churn; the log holds at most 4 MiB), against +247 MiB
    // held without the bound.
    expect(peak - baseline).toBeLessThan(100 * MiB);
    // Still serving.
    gw.send({ jsonrpc: '2.0', id: 3, method: 'ping' });
    await vi.waitFor(() => expect(gw.messages.some((m) => m.id === 3)).toBe(true), { timeout: 30_000 });
  });
});
