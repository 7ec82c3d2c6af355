/**
 * The `DownstreamPort` contract run against `StdioDownstream`, whose client is a real child
 * process on the other end of the pipes (its stdout is the gateway's input, its stdin the
 * gateway's output), driven over an IPC channel: it writes the lines it is told to, reports every
 * line it reads, stops reading its stdin when told (the pipe fills), and dies by SIGKILL.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { downstreamPortContract } from '../../core/test-support/downstream-port.contract.js';
import { silentLogger } from '../../observe/logger.js';
import { Metrics } from '../../observe/metrics.js';
import { idKey, type JsonRpcMessage } from '../../protocol/jsonrpc/types.js';
import { StdioDownstream } from './stdio-downstream.js';

const CLIENT = `
process.on('message', (m) => {
  if (m.write !== undefined) process.stdout.write(m.write + '\\n');
  if (m.stop) process.stdin.pause();
  if (m.end) process.stdout.end();
});
let pending = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  pending += chunk;
  let i;
  while ((i = pending.indexOf('\\n')) >= 0) {
    process.send({ line: pending.slice(0, i) });
    pending = pending.slice(i + 1);
  }
});
`;

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

downstreamPortContract('StdioDownstream', async () => {
  const child = spawn(process.execPath, ['-e', CLIENT], { stdio: ['pipe', 'pipe', 'inherit', 'ipc'] });
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  const received: unknown[] = [];
  child.on('message', (m: { line?: string }) => {
    if (m.line !== undefined) received.push(JSON.parse(m.line));
  });
  const handed = new Set<string>();
  const downstream = new StdioDownstream({
    input: child.stdout as Readable,
    output: child.stdin as Writable,
    maxMessageBytes: 64 * 1024,
    logger: silentLogger,
    metrics: new Metrics(),
    revision: () => '2025-03-26',
    onmessage: (message: JsonRpcMessage) => {
      if ('id' in message && 'method' in message) handed.add(idKey(message.id));
    },
    onend: () => {},
  });
  downstream.start();
  const tell = (m: Record<string, unknown>) => {
    if (child.connected) child.send(m);
  };
  const request = (id: number) => ({ jsonrpc: '2.0', id, method: 'contract/call', params: {} });
  const waitHanded = async (ids: readonly number[]) => {
    const deadline = performance.now() + 5000;
    while (!ids.every((id) => handed.has(idKey(id)))) {
      if (performance.now() > deadline) throw new Error(`requests ${ids.join(', ')} were not handed on`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };
  return {
    port: downstream,
    call: async (id) => {
      tell({ write: JSON.stringify(request(id)) });
      await waitHanded([id]);
    },
    batch: async (ids) => {
      tell({ write: JSON.stringify(ids.map(request)) });
      await waitHanded(ids);
    },
    routerId: (id) => id,
    received: () => received,
    stopReading: () => tell({ stop: true }),
    kill: async () => {
      child.kill('SIGKILL');
      await exited(child);
    },
    end: async () => tell({ end: true }),
    dispose: async () => {
      child.kill('SIGKILL');
      await exited(child);
    },
  };
});

describe('StdioDownstream: the contract before start()', () => {
  // The stdio gateway gives the router the session's port before it starts reading its stdin (the
  // upstream starts in between, and a server may speak first): a client that has closed its end of
  // the gateway's stdout by then must not crash the gateway with an unhandled EPIPE.
  it('send never throws, now or later, to a client that has closed its input', async () => {
    // A client that closes the pipe it reads and stays alive (so its stdin is not destroyed for it).
    const child = spawn(
      process.execPath,
      ['-e', "require('node:fs').closeSync(0); setInterval(() => {}, 1000)"],
      {
        stdio: ['pipe', 'pipe', 'inherit'],
      },
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    const crashes: unknown[] = [];
    const crash = (error: unknown) => crashes.push(error);
    process.prependListener('uncaughtException', crash);
    try {
      const downstream = new StdioDownstream({
        input: child.stdout as Readable,
        output: child.stdin as Writable,
        maxMessageBytes: 64 * 1024,
        logger: silentLogger,
        metrics: new Metrics(),
        revision: () => '2025-11-25',
        onmessage: () => {},
        onend: () => {},
      });
      const message: JsonRpcMessage = {
        jsonrpc: '2.0',
        method: 'notifications/message',
        params: { level: 'info' },
      };
      for (let i = 0; i < 20; i++) {
        expect(() => downstream.send(JSON.stringify(message), message, { kind: 'unrelated' })).not.toThrow();
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(crashes).toEqual([]);
    } finally {
      process.removeListener('uncaughtException', crash);
      child.kill('SIGKILL');
      await exited(child);
    }
  });
});
