/**
 * audit.md §7, tamper tests 23-31: what goes into a record (canonical form, ids, redaction, no
 * output bodies) and how the writer behaves (concurrency, restart, failure, file modes).
 */
import { createHash } from 'node:crypto';
import { constants, readdirSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SbErrorCode, SwitchboardError } from '../../errors/switchboard-error.js';
import { MemoryLogger } from '../../observe/logger.js';
import { Metrics } from '../../observe/metrics.js';
import { canonicalize } from '../canonical-json.js';
import { type AppendFile, type LedgerIo, nodeLedgerIo } from './append-file.js';
import type { AuditEvent } from './audit-event.js';
import { CHECKPOINTS_FILE, ledgerFileName, SIGNER_KEY_FILE, STATE_FILE } from './ledger-paths.js';
import { entryHashOf } from './record-line.js';
import {
  openLedger,
  readLines,
  recordOf,
  sampleEvent,
  tempDir,
  verifyBothWays,
  writeLedger,
} from './test-support/ledger-fixture.js';

const FILE = ledgerFileName(1);
let cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups) cleanup();
  cleanups = [];
});

function dir(): string {
  const made = tempDir();
  cleanups.push(made.cleanup);
  return made.dir;
}

const event = (overrides: Partial<AuditEvent>): AuditEvent => ({
  method: 'tools/call',
  tier: 'T1',
  decision: 'allowed',
  duration_ms: 1,
  ...overrides,
});

/** Every file under `root`, recursively, as one buffer each. */
function allFiles(root: string): Buffer[] {
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => readFileSync(join(entry.parentPath, entry.name)));
}

/** An I/O port that fails writes while `failing` is set (after writing `partial` bytes, when set). */
function flakyIo(): { io: LedgerIo; state: { failing: boolean; partial: number; syncs: number } } {
  const state = { failing: false, partial: 0, syncs: 0 };
  const io: LedgerIo = {
    syncDirectory: (path) => nodeLedgerIo.syncDirectory(path),
    async openAppend(path): Promise<AppendFile> {
      const file = await nodeLedgerIo.openAppend(path);
      return {
        async write(data) {
          if (state.failing && !path.endsWith(CHECKPOINTS_FILE)) {
            if (state.partial > 0) await file.write(data.subarray(0, state.partial));
            throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
          }
          await file.write(data);
        },
        sync: () => {
          state.syncs++;
          return file.sync();
        },
        size: () => file.size(),
        truncate: (size) => file.truncate(size),
        close: () => file.close(),
      };
    },
  };
  return { io, state };
}

describe('tamper tests 23-31 (audit.md §7)', () => {
  it('tamper 23: records are RFC 8785: Appendix B numbers, UTF-16 member order; NaN, Infinity, lone surrogates, BigInt repaired', async () => {
    const d = dir();
    const ledger = await openLedger(d);
    // RFC 8785 Appendix B inputs (the first one as the RFC writes it, more digits than a double holds).
    const numbers = [Number('333333333.33333329'), 1e30, 4.5, 0.002, 1e-27, -0, 1e21, 1e-7];
    // UTF-16 code unit order: U+1F600 (D83D DE00) sorts before U+FB01, although its code point is larger.
    const names = { '\ufb01': 8, '\u20ac': 1, '\u00e9': 2, '\ud83d\ude00': 3, '\r': 4, '1': 5, a: 6, A: 7 };
    const hostile = { nan: Number.NaN, inf: Number.POSITIVE_INFINITY, lone: 'x\ud800y', big: 10n ** 20n };
    await ledger.append(event({ args: { numbers, names, hostile } }));
    await ledger.close();
    const line = readLines(d)[0] as string;
    expect(line).toContain('"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27,0,1e+21,1e-7]');
    expect(line).toContain(
      '"names":{"\\r":4,"1":5,"A":7,"a":6,"\u00e9":2,"\u20ac":1,"\ud83d\ude00":3,"\ufb01":8}',
    );
    expect(line).toContain(
      '"hostile":{"big":"100000000000000000000","inf":null,"lone":"x\ufffdy","nan":null}',
    );
    // The canonicalizer itself refuses what the ledger repaired.
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, 'x\ud800', 1n]) {
      expect(() => canonicalize(bad)).toThrow(SwitchboardError);
    }
    // And the stored bytes are exactly what the general canonicalizer makes of the parsed record.
    const { entry_hash: stated, ...body } = recordOf(line);
    expect(entryHashOf(canonicalize(body))).toBe(stated);
  });

  it('tamper 24: the canonical bytes equal a fixed golden file', async () => {
    const golden = readFileSync(new URL('./testdata/golden-v1.jsonl', import.meta.url));
    const d = dir();
    const ledger = await openLedger(d);
    for (const e of GOLDEN_EVENTS) await ledger.append(e);
    await ledger.close();
    expect(readFileSync(join(d, FILE)).equals(golden)).toBe(true);
    // Each golden line re-derives from its parsed record with the general canonicalizer.
    for (const line of golden.toString('utf8').trimEnd().split('\n')) {
      const { entry_hash: stated, ...body } = recordOf(line);
      expect(`${canonicalize(body).slice(0, -1)},"entry_hash":"${stated}"}`).toBe(line);
      expect(entryHashOf(canonicalize(body))).toBe(stated);
    }
  });

  it('tamper 25: request ids are bounded: ints, strings, objects, throwing toString, blanks, 10k chars, emoji at 128, controls', async () => {
    const d = dir();
    const ledger = await openLedger(d);
    const emoji = `${'a'.repeat(127)}\u{1f600}tail`;
    const ids: [unknown, string | undefined][] = [
      [42, '42'],
      ['req-1', 'req-1'],
      [{ toString: () => 'obj' }, 'obj'],
      [
        {
          toString() {
            throw new Error('hostile');
          },
        },
        undefined,
      ],
      ['   ', undefined],
      ['x'.repeat(10_000), 'x'.repeat(128)],
      [emoji, `${'a'.repeat(127)}\u{1f600}`],
      ['a\u0000b\u001bc\u009fd\n', 'abcd'],
    ];
    for (const [id] of ids) await ledger.append(event({ request_id: id }));
    await ledger.close();
    const stored = readLines(d).map((line) => recordOf(line).request_id);
    expect(stored).toEqual(ids.map(([, expected]) => expected));
    expect(await verifyBothWays({ dir: d })).toMatchObject({ status: 'unanchored', records: ids.length });
  });

  it('tamper 26: 100 concurrent async tasks keep an unbroken chain with unique seqs', async () => {
    const d = dir();
    const ledger = await openLedger(d);
    const results = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        await new Promise((resolve) => setTimeout(resolve, (i * 7) % 13));
        return ledger.append(sampleEvent(i + 1), { durable: i % 10 === 0 });
      }),
    );
    await ledger.close();
    expect(new Set(results.map((r) => r.seq)).size).toBe(100);
    expect(readLines(d).map((line) => recordOf(line).seq)).toEqual(
      Array.from({ length: 100 }, (_, i) => i + 1),
    );
    expect(await verifyBothWays({ dir: d })).toMatchObject({
      status: 'unanchored',
      records: 100,
      checkpoints: 1,
    });
  });

  it('tamper 27: a restart continues the chain (seq and prev recovered), from state.json or from the log', async () => {
    const d = dir();
    await writeLedger(d, 25);
    for (const damage of ['none', 'missing', 'wrong', 'hash'] as const) {
      if (damage === 'missing') writeFileSync(join(d, STATE_FILE), '');
      if (damage === 'hash') {
        // Well-formed, but it names a record that is not the one at that place.
        writeFileSync(
          join(d, STATE_FILE),
          readFileSync(join(d, STATE_FILE), 'utf8').replace(
            /"entryHash":"[0-9a-f]+"/,
            `"entryHash":"${'ab'.repeat(32)}"`,
          ),
        );
      }
      if (damage === 'wrong')
        writeFileSync(
          join(d, STATE_FILE),
          readFileSync(join(d, STATE_FILE), 'utf8').replace(/"seq":\d+/, '"seq":3'),
        );
      const lines = readLines(d);
      const last = recordOf(lines[lines.length - 1] as string);
      const logger = new MemoryLogger();
      const ledger = await openLedger(d, { logger });
      const next = await ledger.append(sampleEvent(lines.length + 1));
      await ledger.close();
      expect(next.seq).toBe((last.seq as number) + 1);
      expect(recordOf(readLines(d).at(-1) as string).prev_hash).toBe(last.entry_hash);
      expect(logger.entries.some((e) => e.message.includes('rebuilding'))).toBe(damage !== 'none');
    }
    expect(await verifyBothWays({ dir: d })).toMatchObject({ status: 'unanchored', records: 29 });
  });

  it('tamper 28: output bodies and secret arguments never reach the disk (sentinel)', async () => {
    const d = dir();
    const sentinel = 'S3NT1NEL-c0ffee';
    const ledger = await openLedger(d);
    const output = JSON.stringify({ content: [{ type: 'text', text: `the body holds ${sentinel} é` }] });
    await ledger.append(
      event({
        args: { password: sentinel, nested: { api_key: sentinel, list: [{ token: sentinel }] } },
        output,
        error: `upstream said: Authorization: Bearer ${sentinel}`,
      }),
    );
    await ledger.append(event({ decision: 'error', output: sentinel }));
    await ledger.close();
    const files = allFiles(d);
    expect(files.length).toBeGreaterThanOrEqual(5);
    for (const content of files) expect(content.includes(sentinel)).toBe(false);
    const [first] = readLines(d).map(recordOf);
    expect(first).toMatchObject({
      output_len: Buffer.byteLength(output),
      output_sha256: createHash('sha256').update(output).digest('hex'),
      args: { password: '[REDACTED]', nested: { api_key: '[REDACTED]' } },
    });
  });

  it('tamper 29: secret keys, token shapes, Authorization headers, DSN passwords and deep nesting are redacted before hashing', async () => {
    const d = dir();
    const ledger = await openLedger(d, { redact: { keys: ['internal_ref'], patterns: ['CASE-[0-9]{6}'] } });
    let deep: unknown = 'DEEP-SECRET';
    for (let i = 0; i < 40; i++) deep = { level: deep };
    const secrets = {
      clientSecret: 'k1-plain-secret-value',
      headers: [['Authorization', 'Basic dXNlcjpwYXNzd29yZA==']],
      note: 'use ghp_abcdefghijklmnopqrstuvwxyz0123456789 and AKIAABCDEFGHIJKLMNOP',
      raw: 'Authorization: Bearer abc.def.ghi-very-secret',
      dsn: 'postgres://admin:hunter2-dsn@db.internal:5432/prod',
      internal_ref: 'mine',
      ticket: 'see CASE-123456',
      deep,
    };
    await ledger.append(event({ args: secrets, target: 'mysql://root:rootpw-target@host/db' }));
    await ledger.close();
    const text = readFileSync(join(d, FILE), 'utf8');
    for (const secret of [
      'k1-plain-secret',
      'dXNlcjpwYXNzd29yZA',
      'ghp_abcdef',
      'AKIAABCDEFGHIJKLMNOP',
      'abc.def.ghi',
      'hunter2-dsn',
      'rootpw-target',
      'CASE-123456',
      'DEEP-SECRET',
      '"mine"',
    ]) {
      expect(text, secret).not.toContain(secret);
    }
    expect(text).toContain('postgres://admin:');
    expect(text).toContain('[REDACTED:depth]');
    expect(await verifyBothWays({ dir: d })).toMatchObject({ status: 'unanchored', records: 1 });
  });

  it('tamper 30: when the sink fails, appends reject (T1+ calls are refused) and the failure is reported', async () => {
    const d = dir();
    const { io, state } = flakyIo();
    const logger = new MemoryLogger();
    const metrics = new Metrics();
    const ledger = await openLedger(d, { io, logger, metrics, probeIntervalMs: 5 });
    await ledger.append(sampleEvent(1));
    state.failing = true;
    state.partial = 25;
    const refused = await Promise.allSettled([ledger.append(sampleEvent(2)), ledger.append(sampleEvent(3))]);
    for (const outcome of refused) {
      expect(outcome.status).toBe('rejected');
      const reason = (outcome as PromiseRejectedResult).reason as SwitchboardError;
      expect(reason).toBeInstanceOf(SwitchboardError);
      expect(reason.code).toBe(SbErrorCode.AuditUnavailable);
      expect(reason.message).toContain('ENOSPC');
    }
    expect(ledger.healthy).toBe(false);
    expect(metrics.get('audit_write_errors_total')).toBe(1);
    expect(logger.entries.filter((e) => e.level === 'error').map((e) => e.message)).toEqual([
      'audit ledger: cannot write records; audited calls are refused until a write succeeds',
    ]);
    // While the disk refuses, the ledger's own probes fail too; it stays unhealthy.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(ledger.healthy).toBe(false);
    // The disk recovers: a probe notices without any append (the governance layer appends nothing
    // while it refuses calls), and the next append continues the chain from the last record written.
    state.failing = false;
    for (let i = 0; i < 200 && !ledger.healthy; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(ledger.healthy).toBe(true);
    expect(logger.entries.find((e) => e.message === 'audit ledger: writable again')?.fields).toMatchObject({
      how: 'a probe succeeded',
    });
    expect(await ledger.append(sampleEvent(4))).toMatchObject({ seq: 2 });
    await ledger.close();
    expect(logger.entries.some((e) => e.message.includes('removed the fragment'))).toBe(true);
    expect(await verifyBothWays({ dir: d })).toMatchObject({ status: 'unanchored', records: 2 });
  });

  it('tamper 31: ledger files are created 0600 and opened O_APPEND', async () => {
    const d = dir();
    const ledger = await openLedger(d);
    await ledger.append(sampleEvent(1));
    // O_APPEND, as the kernel sees the open file.
    const fds = readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`) === join(d, FILE);
      } catch {
        return false;
      }
    });
    expect(fds.length).toBe(1);
    const flags = Number.parseInt(
      /flags:\s+([0-7]+)/.exec(readFileSync(`/proc/self/fdinfo/${fds[0]}`, 'utf8'))?.[1] ?? '0',
      8,
    );
    expect(flags & constants.O_APPEND).toBe(constants.O_APPEND);
    // And as behaviour: a line written by someone else in between is not overwritten.
    writeFileSync(join(d, FILE), 'intruder\n', { flag: 'a' });
    await ledger.append(sampleEvent(2));
    await ledger.close();
    expect(readLines(d)[1]).toBe('intruder');
    expect(recordOf(readLines(d)[2] as string).seq).toBe(2);
    for (const file of [FILE, CHECKPOINTS_FILE, SIGNER_KEY_FILE, STATE_FILE]) {
      expect(statSync(join(d, file)).mode & 0o777, file).toBe(0o600);
    }
    expect(statSync(d).mode & 0o777).toBe(0o700);
  });
});

/** The events of testdata/golden-v1.jsonl (with the stepping clock's first three instants). */
const GOLDEN_EVENTS: AuditEvent[] = [
  {
    session_id: 's-1',
    upstream: 'files',
    method: 'tools/call',
    target: 'read_file',
    tier: 'T1',
    decision: 'allowed',
    args: { path: '/etc/motd' },
    output: '{"content":[{"type":"text","text":"hello"}]}',
    duration_ms: 12.5,
    trace_id: 'env-1',
  },
  {
    session_id: 's-1',
    client_id: 'alice',
    request_id: 7,
    upstream: 'docs',
    method: 'resources/read',
    target: 'file:///srv/secret.txt',
    tier: 'T2',
    decision: 'denied',
    args: { uri: 'file:///srv/secret.txt' },
    error: 'policy denied: rule no-secrets',
    duration_ms: 0.25,
    trace_id: 'env-2',
    rule: 'no-secrets',
  },
  {
    session_id: 's-2',
    client_id: 'bob',
    request_id: 'req-3',
    upstream: 'shell',
    method: 'tools/call',
    target: 'run',
    tier: 'T3',
    decision: 'approved',
    args: { b: 1, a: [1, 2.5, -0], é: 'héllo ✓ 😀', z: null },
    output: '{"content":[]}',
    duration_ms: 1500,
    trace_id: 'env-3',
    decided_by: 'carol',
    rule: 'rules[2]',
  },
];
