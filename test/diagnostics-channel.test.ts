/**
 * Standard Node tooling watches a running gateway without touching it: a script loaded with
 * `NODE_OPTIONS=--import …` subscribes to the `switchboard:hop` diagnostics channel and sees every
 * hop of a call, with its MEUP envelope, while the gateway has no tap of its own for it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ECHO_SERVER, jsonLines, tempDir } from './support/cli.js';
import { StdioLines } from './support/stdio-lines.js';

describe('the switchboard:hop diagnostics channel', () => {
  it('shows a subscriber loaded with --import every hop of a call through switchboard stdio', async () => {
    const dir = tempDir();
    const out = join(dir, 'hops.jsonl');
    const subscriber = join(dir, 'subscriber.mjs');
    writeFileSync(
      subscriber,
      [
        "import diagnosticsChannel from 'node:diagnostics_channel';",
        "import { appendFileSync } from 'node:fs';",
        "diagnosticsChannel.subscribe('switchboard:hop', (hop) => {",
        '  const m = hop.message;',
        `  appendFileSync(${JSON.stringify(out)}, JSON.stringify({ direction: hop.direction, from: hop.from, to: hop.to, method: m.method, id: m.id, kind: hop.meup.kind }) + '\\n');`,
        '});',
      ].join('\n'),
    );
    const gw = new StdioLines(
      ['--data-dir', join(dir, 'data'), '--name', 'echo', '--', process.execPath, ECHO_SERVER],
      { ...process.env, NODE_OPTIONS: `--import=${pathToFileURL(subscriber).href}` },
    );
    try {
      gw.writeLine(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: '2025-11-25',
            capabilities: {},
            clientInfo: { name: 't', version: '1' },
          },
        }),
      );
      await gw.next('the initialize result', (l) => (l as { id?: unknown }).id === 1);
      gw.writeLine(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
      gw.writeLine(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 2,
          method: 'tools/call',
          params: { name: 'echo', arguments: { message: 'seen' } },
        }),
      );
      await gw.next('the call result', (l) => (l as { id?: unknown }).id === 2);
    } finally {
      gw.child.stdin.end();
      await gw.exited;
    }
    const hops = jsonLines(readFileSync(out, 'utf8'));
    const call = hops.filter((h) => h.method === 'tools/call');
    expect(call.map((h) => [h.direction, h.kind, h.from, h.to])).toEqual([
      ['client->server', 'mcp/request', expect.stringMatching(/^client-/), 'gateway'],
      ['client->server', 'mcp/request', 'gateway', 'server-echo'],
    ]);
    // And its answer's two hops: server to gateway, then gateway to the client under its own id.
    const answers = hops.filter((h) => h.kind === 'mcp/response' && h.direction === 'server->client');
    expect(answers.slice(-2).map((h) => [h.from, h.to])).toEqual([
      ['server-echo', 'gateway'],
      ['gateway', expect.stringMatching(/^client-/)],
    ]);
    expect(answers.at(-1)?.id).toBe(2);
  });
});
