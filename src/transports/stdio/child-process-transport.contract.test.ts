/**
 * The `UpstreamTransport` contract run against `ChildProcessTransport`, whose peer is a real child:
 * a small MCP server in `node -e` that greets, answers every request, and logs what it received on
 * stderr (the transport's log, which is how the peer's record is read back). The peer dies by
 * SIGKILL, hangs by SIGSTOP (it then neither answers nor reads its stdin) and misbehaves after
 * SIGUSR1.
 */

import { describe, expect, it } from 'vitest';
import { upstreamTransportContract } from '../../core/test-support/upstream-transport.contract.js';
import { MemoryLogger } from '../../observe/logger.js';
import { Metrics } from '../../observe/metrics.js';
import { childEnvironment } from './child-env.js';
import { ChildProcessTransport } from './child-process-transport.js';

const PEER = `
const out = (m) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\\n');
out({ method: 'contract/hello' });
let rude = false;
process.on('SIGUSR1', () => { rude = true; });
const rl = require('node:readline').createInterface({ input: process.stdin });
rl.on('line', (line) => {
  let m;
  try { m = JSON.parse(line); } catch { return; }
  process.stderr.write('received ' + m.method + '\\n');
  if (m.id === undefined || m.method === undefined) return;
  if (rude) {
    process.stdout.write('not json at all\\n{"jsonrpc":"2.0","id":\\n');
    out({ id: 'never-asked', result: {} });
    out({ id: m.id, result: { blob: 'x'.repeat(256 * 1024) } });
    out({ id: m.id, method: 'sampling/createMessage', params: { blob: 'x'.repeat(256 * 1024) } });
    return;
  }
  if (m.method === 'initialize')
    out({ id: m.id, result: { protocolVersion: '2025-11-25', capabilities: {}, serverInfo: { name: 'peer', version: '1' } } });
  else out({ id: m.id, result: { echo: m.method } });
});
rl.on('close', () => process.exit(0));
`;

function signal(pid: number | undefined, name: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(pid, name);
  } catch {
    // Already gone.
  }
}

upstreamTransportContract('ChildProcessTransport', async () => {
  const logger = new MemoryLogger();
  const transport = new ChildProcessTransport({
    name: 'peer',
    command: process.execPath,
    args: ['-e', PEER],
    env: childEnvironment({}),
    maxMessageBytes: 64 * 1024,
    logger,
    metrics: new Metrics(),
    shutdownGraceMs: 200,
  });
  return {
    transport,
    greeting: 'contract/hello',
    received: () =>
      logger.entries.flatMap((e) =>
        e.message.startsWith('received ') ? [e.message.slice('received '.length)] : [],
      ),
    kill: async () => signal(transport.pid, 'SIGKILL'),
    hang: () => signal(transport.pid, 'SIGSTOP'),
    // Lines that are not JSON, a response to an id never asked, and an answer and a request over
    // the limit (which the transport answers itself), instead of each answer.
    misbehave: () => signal(transport.pid, 'SIGUSR1'),
    dispose: async () => signal(transport.pid, 'SIGKILL'),
  };
});

describe('ChildProcessTransport: the contract at its edges', () => {
  // The child exits while a grandchild it started keeps its stdout open and writes on: onclose
  // comes 200 ms after the exit (stdout does not close), and the grandchild's lines must not follow.
  const ORPHAN_WRITER = `
const { spawn } = require('node:child_process');
spawn(process.execPath, ['-e', "let n = 0; const t = setInterval(() => { process.stdout.write(JSON.stringify({ jsonrpc: '2.0', method: 'late', params: { n: n++ } }) + '\\\\n'); if (n > 40) clearInterval(t); }, 20)"], { stdio: ['ignore', 'inherit', 'ignore'] });
setTimeout(() => process.exit(0), 50);
`;

  it('delivers nothing after onclose', async () => {
    const transport = new ChildProcessTransport({
      name: 'orphan',
      command: process.execPath,
      args: ['-e', ORPHAN_WRITER],
      env: childEnvironment({}),
      maxMessageBytes: 64 * 1024,
      logger: new MemoryLogger(),
      metrics: new Metrics(),
      shutdownGraceMs: 200,
    });
    const events: string[] = [];
    transport.onmessage = () => events.push('message');
    transport.onerror = () => events.push('error');
    transport.onclose = () => events.push('close');
    await transport.start();
    const deadline = performance.now() + 5000;
    while (!events.includes('close') && performance.now() < deadline)
      await new Promise((r) => setTimeout(r, 10));
    // The grandchild writes for ~800 ms in all.
    await new Promise((r) => setTimeout(r, 900));
    expect(events).toContain('close');
    expect(events.slice(events.indexOf('close') + 1)).toEqual([]);
    await transport.close();
  });

  it('spawns nothing when start() comes after close()', async () => {
    const transport = new ChildProcessTransport({
      name: 'late',
      command: process.execPath,
      args: ['-e', 'setInterval(() => {}, 1000)'],
      env: childEnvironment({}),
      maxMessageBytes: 64 * 1024,
      logger: new MemoryLogger(),
      metrics: new Metrics(),
    });
    await transport.close();
    try {
      await expect(transport.start()).rejects.toThrow(/closed before it started/);
      expect(transport.pid).toBeUndefined();
    } finally {
      // Without the fix a child would run on, unsupervised.
      if (transport.pid !== undefined) process.kill(transport.pid, 'SIGKILL');
    }
  });
});
