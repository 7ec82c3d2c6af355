/**
 * Issue 22: the human views of the trace (`trace show`, `tree`, `follow`) show each hop at the
 * time it happened. A gateway→client response used to show its request's time and a latency of
 * `0.00ms`, so `tree` listed a call's response before the progress it sent. End to end: the SDK
 * client calls a tool that sends progress through `switchboard stdio` in front of
 * server-everything, and the trace of that run is read back as a person would.
 */
import { rmSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { everythingThroughStdio, jsonLines, runCli, tempDir } from './support/cli.js';

interface WireEnvelope {
  readonly id: string;
  readonly ts: string;
  readonly kind: string;
  readonly from: string;
  readonly to?: readonly string[];
  readonly context?: string;
  readonly correlation_id?: readonly string[];
  readonly payload: { readonly id?: unknown; readonly method?: string; readonly params?: unknown };
}

/** `HH:MM:SS.mmm` of an envelope's ISO timestamp, as the text views print it. */
const clock = (ts: string): string => ts.slice(11, 23);

describe('trace views show a response at the time it was sent (issue 22)', () => {
  const dataDir = tempDir('sb-issue22-times-');
  let session = '';
  let envelopes: WireEnvelope[] = [];
  let call: WireEnvelope;
  let response: WireEnvelope;
  let progress: WireEnvelope[];

  beforeAll(async () => {
    const client = new Client({ name: 'issue-22-times', version: '1.0.0' });
    await client.connect(everythingThroughStdio(dataDir, ['--no-audit']));
    await client.callTool(
      { name: 'trigger-long-running-operation', arguments: { duration: 0.6, steps: 3 } },
      undefined,
      { onprogress: () => {} },
    );
    await client.close();
    const sessions = await runCli(['trace', 'sessions', '--json', '--data-dir', dataDir]);
    session = jsonLines<{ key: string; transport: string }>(sessions.stdout).find(
      (s) => s.transport === 'stdio',
    )!.key;
    const shown = await runCli(['trace', 'show', '--json', '--data-dir', dataDir, '--', session]);
    envelopes = jsonLines<WireEnvelope>(shown.stdout);
    call = envelopes.find((e) => e.payload.method === 'tools/call' && e.from === `client-${session}`)!;
    response = envelopes.find(
      (e) => e.kind === 'mcp/response' && e.from === 'gateway' && e.correlation_id?.[0] === call.id,
    )!;
    progress = envelopes.filter(
      (e) => e.payload.method === 'notifications/progress' && e.to?.[0] === `client-${session}`,
    );
  }, 30_000);
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('has a call with three progress notifications and a response ~0.6 s later in the JSON', () => {
    expect(progress).toHaveLength(3);
    expect(Date.parse(response.ts) - Date.parse(call.ts)).toBeGreaterThan(300);
  });

  it('trace tree lists the progress before the response, each at its own time', async () => {
    const tree = await runCli(['trace', 'tree', '--data-dir', dataDir, '--', call.context!]);
    expect(tree.code, tree.stderr).toBe(0);
    const lines = tree.stdout.split('\n');
    const lineOf = (e: WireEnvelope): number => lines.findIndex((l) => l.includes(e.id));
    const responseLine = lineOf(response);
    expect(responseLine).toBeGreaterThan(0);
    for (const p of progress) {
      expect(lineOf(p)).toBeGreaterThan(0);
      expect(lineOf(p)).toBeLessThan(responseLine);
      expect(lines[lineOf(p)]).toContain(clock(p.ts));
    }
    expect(lines[responseLine]).toContain(clock(response.ts));
  });

  it("trace show prints the response's own time and the call's real latency", async () => {
    const shown = await runCli(['trace', 'show', '--wide', '--data-dir', dataDir, '--', session]);
    expect(shown.code, shown.stderr).toBe(0);
    const row = shown.stdout.split('\n').find((l) => l.includes(response.id))!;
    expect(row).toContain(clock(response.ts));
    expect(row).not.toContain(clock(call.ts));
    const latency = /\s(\d+(?:\.\d+)?)(ms|s)\s/.exec(row);
    expect(latency).not.toBeNull();
    const ms = Number(latency![1]) * (latency![2] === 's' ? 1000 : 1);
    expect(ms).toBeGreaterThan(300);
  });

  it("trace follow prints the response's own time", async () => {
    const followed = await runCli(['trace', 'follow', '--data-dir', dataDir, response.id]);
    expect(followed.code, followed.stderr).toBe(0);
    const root = followed.stdout.split('\n').find((l) => l.includes(response.id))!;
    expect(root).toContain(clock(response.ts));
  });
});
