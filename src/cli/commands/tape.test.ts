/**
 * `switchboard tape record|export` as commands: usage errors and exit codes, and an export read
 * from a real SQLite trace file (the integration tests export from a live gateway's trace).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readTape } from '../../tape/tape-reader.js';
import { SqliteTraceStore } from '../../trace/sqlite-trace-store.js';
import type { TraceRecord } from '../../trace/types.js';
import { runCli } from '../test-support/run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'switchboard-tape-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function traceWith(mode: 'full' | 'redacted'): string {
  const path = join(dir, `${mode}.db`);
  const store = new SqliteTraceStore(path, { payloads: mode });
  let n = 0;
  const hop = (from: string, to: string, payload: Record<string, unknown>, context: string): TraceRecord => {
    n += 1;
    return {
      envelope: {
        protocol: 'meup/v0.2',
        id: `01M8GY00000000000000000${String(n).padStart(3, '0')}`,
        ts: new Date(1_000 + n).toISOString(),
        from,
        to: [to],
        kind: 'method' in payload ? 'mcp/request' : 'mcp/response',
        context,
        payload,
      },
      session: 'S1',
      direction: from === 'server-x' ? 'server->client' : 'client->server',
      transport: 'stdio',
      upstream: 'x',
      receivedAt: 1_000 + n,
    };
  };
  store.append([
    hop('gateway', 'server-x', { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }, 'S1/A'),
    hop(
      'server-x',
      'gateway',
      {
        jsonrpc: '2.0',
        id: 1,
        result: { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 'x', version: '1' } },
      },
      'S1/A',
    ),
    hop(
      'gateway',
      'server-x',
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo' } },
      'S1/B',
    ),
    hop('server-x', 'gateway', { jsonrpc: '2.0', id: 2, result: { content: [] } }, 'S1/B'),
  ]);
  store.upsertSession({ key: 'S1', transport: 'stdio', upstreams: ['x'], startedAt: 1_000 });
  store.close();
  return path;
}

describe('switchboard tape record', () => {
  it('needs a server: a command after -- or --url, not both', async () => {
    const neither = await runCli(['tape', 'record', '-o', join(dir, 'a.jsonl')]);
    expect(neither.code).toBe(2);
    expect(neither.err).toContain('give the server to run after --');
    const both = await runCli([
      'tape',
      'record',
      '-o',
      join(dir, 'a.jsonl'),
      '--url',
      'http://127.0.0.1:9/mcp',
      '--',
      'node',
    ]);
    expect(both.code).toBe(2);
    // commander's own usage error (exit 1 here; the binary's main turns it into 2).
    const noOutput = await runCli(['tape', 'record', '--', 'node']);
    expect(noOutput.code).toBe(1);
    expect(noOutput.err).toContain("required option '-o, --output <file>' not specified");
  });
});

describe('switchboard tape export', () => {
  it('writes a tape of a session to stdout', async () => {
    const r = await runCli(['tape', 'export', 'S1', '--trace', traceWith('full')]);
    expect(r.code).toBe(0);
    const tape = readTape(r.out);
    expect(tape.messages).toHaveLength(4);
    expect(tape.header.server.initialize).toMatchObject({ serverInfo: { name: 'x' } });
  });

  it('refuses an incomplete trace with exit 1, and writes it with --allow-incomplete', async () => {
    const trace = traceWith('redacted');
    const refused = await runCli(['tape', 'export', 'S1', '--trace', trace]);
    expect(refused.code).toBe(1);
    expect(refused.err).toContain('message 4 (tools/call)');
    const file = join(dir, 'partial.jsonl');
    const allowed = await runCli([
      'tape',
      'export',
      'S1',
      '--trace',
      trace,
      '--allow-incomplete',
      '-o',
      file,
    ]);
    expect(allowed.code).toBe(0);
    expect(allowed.err).toContain('(1 incomplete, listed in its header)');
    expect(readTape(readFileSync(file)).header.incomplete).toHaveLength(1);
  });

  it('exit 1 for a session not in the trace, 2 for a trace that is not there', async () => {
    const missing = await runCli(['tape', 'export', 'nope', '--trace', traceWith('full')]);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain('no session or context "nope"');
    const noTrace = await runCli(['tape', 'export', 'S1', '--trace', join(dir, 'absent.db')]);
    expect(noTrace.code).toBe(2);
    expect(noTrace.err).toContain('no trace database');
  });
});
