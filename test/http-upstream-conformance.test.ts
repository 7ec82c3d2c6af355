/**
 * The HTTP upstream client judged by the MCP conformance suite's client scenarios
 * (`conformance client`): the suite starts a scenario server and runs a small driver that speaks to
 * it only through `HttpUpstreamTransport` (from the build, as users run it). `sse-retry` checks that
 * a stream closed before its response is resumed with GET + Last-Event-ID no earlier than `retry`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, runPeer } from './support/peers.js';

/** Where the build is; SWITCHBOARD_DIST overrides it (e.g. a build elsewhere). */
const DIST = process.env.SWITCHBOARD_DIST ?? join(ROOT, 'dist');

const DRIVER = `
import { HttpUpstreamTransport } from ${JSON.stringify(pathToFileURL(join(DIST, 'transports/http/upstream/http-upstream.js')).href)};
import { Metrics } from ${JSON.stringify(pathToFileURL(join(DIST, 'observe/metrics.js')).href)};
import { silentLogger } from ${JSON.stringify(pathToFileURL(join(DIST, 'observe/logger.js')).href)};

setTimeout(() => { console.error('driver timed out'); process.exit(2); }, 20000).unref();
const url = process.argv[process.argv.length - 1];
const transport = new HttpUpstreamTransport({ name: 'conformance', url, maxMessageBytes: 1 << 20, logger: silentLogger, metrics: new Metrics() });
const pending = new Map();
let next = 1;
const send = (message) => transport.send(JSON.stringify(message), message);
transport.onmessage = (text) => {
  const value = JSON.parse(text);
  for (const m of Array.isArray(value) ? value : [value]) {
    if ('id' in m && !('method' in m)) pending.get(m.id)?.(m);
    else if ('id' in m) send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'not supported by this driver' } });
  }
};
const request = (method, params) =>
  new Promise((resolve) => {
    const id = next++;
    pending.set(id, resolve);
    send({ jsonrpc: '2.0', id, method, params });
  });
await transport.start();
const init = await request('initialize', {
  protocolVersion: process.env.MCP_CONFORMANCE_PROTOCOL_VERSION ?? '2025-11-25',
  capabilities: {},
  clientInfo: { name: 'switchboard-http-upstream', version: '0' },
});
if (init.error) throw new Error('initialize failed: ' + JSON.stringify(init.error));
send({ jsonrpc: '2.0', method: 'notifications/initialized' });
// Let the standalone GET stream open first, as an SDK client's does: the sse-retry scenario server
// takes any GET that comes after its tool call for the reconnection it measures.
await new Promise((resolve) => setTimeout(resolve, 200));
if (process.env.MCP_CONFORMANCE_SCENARIO !== 'initialize') {
  const list = await request('tools/list', {});
  for (const tool of list.result?.tools ?? []) {
    const args = tool.name === 'add_numbers' ? { a: 2, b: 3 } : {};
    const answer = await request('tools/call', { name: tool.name, arguments: args });
    console.log(JSON.stringify(answer));
  }
}
await transport.close();
`;

describe('conformance client scenarios through the HTTP upstream client', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sb-http-upstream-'));
  const driver = join(dir, 'driver.mjs');
  writeFileSync(driver, DRIVER);

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each(['initialize', 'tools_call', 'sse-retry'])('%s', async (scenario) => {
    const result = await runPeer(
      'conformance',
      ['client', '--command', `${process.execPath} ${driver}`, '--scenario', scenario, '-o', dir],
      {
        timeoutMs: 60_000,
      },
    );
    const output = `${result.stdout}\n${result.stderr}`;
    expect(output, output).not.toMatch(/\bFAILURE\b/);
    expect(result.exitCode, output).toBe(0);
  });
});
