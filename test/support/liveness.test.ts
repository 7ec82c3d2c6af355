/**
 * The liveness probe itself: it must catch a process whose event loop blocks, and must not blame
 * one that answers as fast as its control. The "gateway" here is a bare HTTP server in a child
 * process that, on `POST /block`, spins its event loop for the time asked.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { HealthWatch } from './liveness.js';
import { sleep } from './sse-client.js';

const SERVER = [
  "const server = require('node:http').createServer((req, res) => {",
  "  if (req.method === 'POST') { const until = Date.now() + Number(req.url.slice(7)); while (Date.now() < until); }",
  "  res.end('{}');",
  '});',
  "server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));",
].join('\n');

let child: ChildProcess | undefined;

afterEach(() => {
  child?.kill('SIGKILL');
  child = undefined;
});

async function start(): Promise<string> {
  child = spawn(process.execPath, ['-e', SERVER], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve) => {
    let out = '';
    child!.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve(out.trim());
    });
  });
  return `http://127.0.0.1:${port}`;
}

describe('HealthWatch', () => {
  it('reports a process whose event loop blocks for longer than the limit', async () => {
    const base = await start();
    const health = new HealthWatch(base, { everyMs: 50, limitMs: 500 });
    await sleep(300);
    await fetch(`${base}/block/2500`, { method: 'POST' });
    await sleep(300);
    const report = await health.stop();
    expect(report.failures.length).toBeGreaterThan(0);
    expect(report.failures[0]).toMatch(/^answered in \d+ ms \(the control in \d+ ms\)$/);
    expect(report.maxMs).toBeGreaterThan(report.controlMaxMs + 500);
  });

  it('does not blame a process that answers like its control', async () => {
    const base = await start();
    const health = new HealthWatch(base, { everyMs: 20, limitMs: 500 });
    await sleep(1000);
    const report = await health.stop();
    expect(report.samples).toBeGreaterThan(5);
    expect(report.failures).toEqual([]);
  });
});
