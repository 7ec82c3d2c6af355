import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteTraceStore } from '../../trace/sqlite-trace-store.js';
import { traceRecord } from '../../trace/trace-store.contract.js';
import { sampleTrace } from '../render/test-support/trace-fixture.js';
import { type CliRun, runCli } from '../test-support/run-cli.js';

const ESC = String.fromCharCode(27);
const root = mkdtempSync(join(tmpdir(), 'sb-trace-cli-'));
const dataDir = join(root, 'data');
const trace = sampleTrace();

beforeAll(() => {
  mkdirSync(dataDir);
  const store = new SqliteTraceStore(join(dataDir, 'trace.db'));
  store.upsertSession(trace.session);
  store.append(trace.records);
  store.close();
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const run = (args: readonly string[], options: { color?: boolean } = {}): Promise<CliRun> =>
  runCli(args, options);

const at = (dir = dataDir): string[] => ['--data-dir', dir];
const lines = (text: string): string[] => text.trimEnd().split('\n');

describe('switchboard trace sessions', () => {
  it('lists sessions as a table without colour when stdout has none', async () => {
    const r = await run(['trace', 'sessions', '--wide', ...at()]);
    expect(r).toMatchObject({ code: 0, err: '' });
    expect(lines(r.out)[0]).toMatch(/^SESSION\s+MCP-SESSION-ID/);
    expect(lines(r.out)[1]).toMatch(/^s1\s+c0ffee-mcp\s+http\s+-\s+inspector@0\.9\s+a,b\s.*open\s+7$/);
    expect(r.out).not.toContain(ESC);
  });

  it('takes the data directory from the program option or the environment as well', async () => {
    const global = await run(['--data-dir', dataDir, 'trace', 'sessions', '--wide']);
    expect(global.out).toContain('c0ffee-mcp');
    const before = process.env.SWITCHBOARD_DATA_DIR;
    process.env.SWITCHBOARD_DATA_DIR = dataDir;
    try {
      expect((await run(['trace', 'sessions', '--wide'])).out).toContain('c0ffee-mcp');
    } finally {
      if (before === undefined) delete process.env.SWITCHBOARD_DATA_DIR;
      else process.env.SWITCHBOARD_DATA_DIR = before;
    }
  });

  it('prints one JSON summary per line with --json', async () => {
    const r = await run(['trace', 'sessions', '--json', ...at()]);
    const parsed = lines(r.out).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(parsed).toEqual([{ ...trace.session, envelopes: 7, lastAt: trace.records[6]?.receivedAt }]);
  });

  it('rejects a bad --limit as a usage error', async () => {
    const r = await run(['trace', 'sessions', '--limit', '0', ...at()]);
    expect(r.code).not.toBe(0);
    expect(r.err).toContain('--limit');
  });

  it('colours the table when stdout has colours', async () => {
    expect((await run(['trace', 'sessions', ...at()], { color: true })).out).toContain(ESC);
  });
});

describe('switchboard trace show', () => {
  it('prints the session, then its envelopes in order, by key or by Mcp-Session-Id', async () => {
    const byKey = await run(['trace', 'show', 's1', '--wide', ...at()]);
    expect(byKey.code).toBe(0);
    const out = lines(byKey.out);
    expect(out[1]).toMatch(/^s1\s/);
    expect(out[2]).toBe('');
    expect(out[3]).toMatch(/^#\s+TIME \(UTC\)/);
    expect(out.slice(4).map((l) => l.split(/\s+/).at(-1))).toEqual(trace.records.map((r) => r.envelope.id));
    expect(out[10]).toMatch(/response\s+\(tools\/call\)\s+7\s+#2\s.*#2,#6\s+11\.0ms/);
    const byMcpId = await run(['trace', 'show', 'c0ffee-mcp', '--wide', ...at()]);
    expect(byMcpId.out).toBe(byKey.out);
  });

  it('prints wire MEUP envelopes, one per line, with --json', async () => {
    const r = await run(['trace', 'show', 'c0ffee-mcp', '--json', ...at()]);
    const wire = lines(r.out).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(wire.map((w) => w.id)).toEqual(trace.records.map((x) => x.envelope.id));
    expect(wire[6]).toMatchObject({ correlation_id: [trace.D, trace.UR], context: `s1/${trace.D}` });
  });

  it('carries the OpenTelemetry ids in --json as the text form lists them (otel.trace_id, otel.span_id)', async () => {
    const dir = join(root, 'with-otel');
    mkdirSync(dir);
    const otel = { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' };
    const store = new SqliteTraceStore(join(dir, 'trace.db'));
    store.upsertSession(trace.session);
    store.append(trace.records.map((r, i) => (i === 0 ? { ...r, otel } : r)));
    store.close();
    const text = await run(['trace', 'show', 'c0ffee-mcp', ...at(dir)]);
    expect(text.out).toContain(`${otel.traceId}  ${otel.spanId}`);
    const json = await run(['trace', 'show', 'c0ffee-mcp', '--json', ...at(dir)]);
    const wire = lines(json.out).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(wire[0]?.otel).toEqual({ trace_id: otel.traceId, span_id: otel.spanId });
    expect(wire.slice(1).filter((w) => 'otel' in w)).toEqual([]);
  });

  it('takes a session id that starts with "-" after "--", and says so when it is given before', async () => {
    const dashed = join(root, 'dashed');
    mkdirSync(dashed);
    const store = new SqliteTraceStore(join(dashed, 'trace.db'));
    store.upsertSession({ ...trace.session, mcpSessionId: '-dashed-mcp' });
    store.append(trace.records);
    store.close();
    const misread = await run(['trace', 'show', '-dashed-mcp', ...at(dashed)]);
    expect(misread.code).not.toBe(0);
    expect(misread.err).toContain('goes after "--"');
    const r = await run(['trace', 'show', '--json', ...at(dashed), '--', '-dashed-mcp']);
    expect(r.code).toBe(0);
    expect(lines(r.out)).toHaveLength(trace.records.length);
  });

  it('exits 1 with a message on stderr for an unknown session', async () => {
    const r = await run(['trace', 'show', 'nope', ...at()]);
    expect(r).toMatchObject({ code: 1, out: '' });
    expect(r.err).toBe(`switchboard: no session "nope" in ${join(dataDir, 'trace.db')}\n`);
  });
});

describe('switchboard trace tree', () => {
  it('draws everything a request caused as a tree', async () => {
    const r = await run(['trace', 'tree', `s1/${trace.D}`, ...at()]);
    expect(r.code).toBe(0);
    const out = lines(r.out);
    expect(out[0]).toBe(`s1/${trace.D}`);
    expect(out).toHaveLength(1 + 6 + 1);
    expect(out).toContain(`├─ ${trace.S}/`);
  });

  it('prints the subtree as wire envelopes with --json', async () => {
    const r = await run(['trace', 'tree', `s1/${trace.D}/${trace.S}`, '--json', ...at()]);
    expect(lines(r.out).map((l) => (JSON.parse(l) as { id: string }).id)).toEqual([trace.S]);
  });

  it('exits 1 for a context with nothing in it', async () => {
    const r = await run(['trace', 'tree', 's1/NOTHING', ...at()]);
    expect(r.code).toBe(1);
    expect(r.err).toContain('no envelopes in context "s1/NOTHING"');
  });
});

describe('switchboard trace follow', () => {
  it('shows the correlation graph around an envelope', async () => {
    const r = await run(['trace', 'follow', trace.R, ...at()]);
    expect(r.code).toBe(0);
    const out = lines(r.out);
    expect(out[0]).toMatch(new RegExp(`${trace.R}  \\(root\\)$`));
    expect(out[1]).toBe('answers ↑');
    expect(out.slice(2, 5).map((l) => l.split(' ').at(-1))).toEqual([trace.D, trace.UR, trace.U]);
    expect(out[4]?.startsWith('    ')).toBe(true);
  });

  it('honours --depth, and prints root, answers, answered-by as wire envelopes with --json', async () => {
    const shallow = await run(['trace', 'follow', trace.R, '--depth', '1', '--json', ...at()]);
    expect(lines(shallow.out).map((l) => (JSON.parse(l) as { id: string }).id)).toEqual([
      trace.R,
      trace.D,
      trace.UR,
    ]);
    const up = await run(['trace', 'follow', trace.U, '--json', ...at()]);
    expect(lines(up.out).map((l) => (JSON.parse(l) as { id: string }).id)).toEqual([
      trace.U,
      trace.D,
      trace.UR,
      trace.R,
    ]);
  });

  it('exits 1 for an unknown envelope and rejects a negative depth', async () => {
    const unknown = await run(['trace', 'follow', '01JDXXXXXXXXXXXXXXXXXXXXXX', ...at()]);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toContain('no envelope "01JDXXXXXXXXXXXXXXXXXXXXXX"');
    const negative = await run(['trace', 'follow', trace.R, '--depth', '-1', ...at()]);
    expect(negative.code).not.toBe(0);
  });
});

describe('reading the trace', () => {
  it('exits 2 saying where it looked when there is no trace database', async () => {
    const empty = join(root, 'empty');
    for (const args of [
      ['trace', 'sessions'],
      ['trace', 'show', 's1'],
      ['trace', 'tree', 's1'],
      ['trace', 'follow', trace.R],
    ]) {
      const r = await run([...args, ...at(empty)]);
      expect(r.code).toBe(2);
      expect(r.out).toBe('');
      expect(r.err).toContain(`no trace database at ${join(empty, 'trace.db')}`);
      expect(r.err).toContain('--data-dir');
    }
  });

  it('reads beside a gateway that holds the database open for writing', async () => {
    const live = join(root, 'live');
    mkdirSync(live);
    const writer = new SqliteTraceStore(join(live, 'trace.db'));
    try {
      writer.append([traceRecord({ id: 'LIVE1', session: 'live', context: 'live' })]);
      expect((await run(['trace', 'show', 'live', '--json', ...at(live)])).out).toContain('"LIVE1"');
      writer.append([traceRecord({ id: 'LIVE2', session: 'live', context: 'live' })]);
      expect(lines((await run(['trace', 'tree', 'live', '--json', ...at(live)])).out)).toHaveLength(2);
    } finally {
      writer.close();
    }
  });
});
