/**
 * The MCP Inspector CLI (`@modelcontextprotocol/inspector` 2.12, on Node 22) lists and calls tools
 * through `switchboard serve` on its built-in default configuration. With `--protocol-era auto` it
 * probes with `server/discover`, finds the gateway modern and speaks 2026-07-28 to it; with
 * `legacy` it opens a session. The trace tells which era each run used.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonLines, runCli } from './support/cli.js';
import { runPeer } from './support/peers.js';
import { type RunningServe, startServe } from './support/serve.js';

interface InspectorOutput {
  readonly result?: {
    readonly tools?: { name: string }[];
    readonly content?: { type: string; text?: string }[];
    readonly _meta?: Record<string, unknown>;
  };
}

async function inspector(url: string, args: readonly string[]): Promise<InspectorOutput> {
  const run = await runPeer('inspectorCli', [url, '--format', 'json', ...args], { timeoutMs: 60_000 });
  if (run.exitCode !== 0) throw new Error(`inspector exited ${run.exitCode}:\n${run.stdout}\n${run.stderr}`);
  return JSON.parse(run.stdout) as InspectorOutput;
}

async function sessionVersions(serve: RunningServe): Promise<string[]> {
  const listed = await runCli(['trace', 'sessions', '--json', '--data-dir', serve.dataDir]);
  expect(listed.code, listed.stderr).toBe(0);
  return jsonLines<{ protocolVersion?: string; transport: string }>(listed.stdout)
    .filter((s) => s.transport === 'http')
    .map((s) => s.protocolVersion ?? '');
}

describe('the Inspector CLI through switchboard serve (default configuration)', () => {
  let serve: RunningServe;

  beforeAll(async () => {
    serve = await startServe();
  }, 120_000);
  afterAll(async () => {
    await serve?.stop();
  });

  it('lists the aggregated tools with --protocol-era auto, over 2026-07-28', async () => {
    const listed = await inspector(serve.url, ['--protocol-era', 'auto', '--method', 'tools/list']);
    const names = (listed.result?.tools ?? []).map((t) => t.name);
    expect(names).toContain('everything__get-sum');
    expect(names).toContain('memory__read_graph');
    expect(await sessionVersions(serve)).toContain('2026-07-28');
  }, 90_000);

  it('calls a tool with arguments with --protocol-era auto', async () => {
    const called = await inspector(serve.url, [
      '--protocol-era',
      'auto',
      '--method',
      'tools/call',
      '--tool-name',
      'everything__get-sum',
      '--tool-arg',
      'a=2',
      '--tool-arg',
      'b=3',
    ]);
    expect(called.result?.content?.[0]?.text).toBe('The sum of 2 and 3 is 5.');
  }, 90_000);

  it('calls a tool that reports progress, and a legacy-era run still works', async () => {
    const slow = await inspector(serve.url, [
      '--protocol-era',
      'auto',
      '--method',
      'tools/call',
      '--tool-name',
      'everything__trigger-long-running-operation',
      '--tool-args-json',
      '{"duration":0.4,"steps":2}',
    ]);
    expect(slow.result?.content?.[0]?.text).toMatch(/Long running operation completed/);
    const legacy = await inspector(serve.url, ['--protocol-era', 'legacy', '--method', 'tools/list']);
    expect((legacy.result?.tools ?? []).length).toBeGreaterThan(10);
    expect((await sessionVersions(serve)).some((v) => v.startsWith('2025-'))).toBe(true);
  }, 90_000);
});
