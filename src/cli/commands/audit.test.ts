import { readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CANCELLED_BY_CLIENT } from '../../audit/ledger/audit-event.js';
import { CHECKPOINTS_FILE, ledgerFileName, VERIFIER_KEY_FILE } from '../../audit/ledger/ledger-paths.js';
import {
  readLines,
  rechain,
  recordOf,
  reencode,
  resignCheckpoints,
  sampleEvent,
  tempDir,
  writeLedger,
  writeLines,
} from '../../audit/ledger/test-support/ledger-fixture.js';
import { type CliRun, runCli } from '../test-support/run-cli.js';

const FILE = ledgerFileName(1);
let cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups) cleanup();
  cleanups = [];
});

const run = (args: readonly string[]): Promise<CliRun> => runCli(args);

/** A data directory whose ledger has 30 records, checkpointed every 10 and anchored beside it. */
async function setup(count = 30) {
  const { dir: root, cleanup } = tempDir('sb-audit-cli-');
  cleanups.push(cleanup);
  const dataDir = join(root, 'data');
  const dir = join(dataDir, 'audit');
  const anchor = join(root, 'anchor.jsonl');
  await writeLedger(dir, count, { ledger: { anchor: { path: anchor } } });
  return { root, dataDir, dir, anchor, lines: readLines(dir) };
}

describe('switchboard audit verify', () => {
  it('states its exit codes in --help', async () => {
    const r = await run(['audit', 'verify', '--help']);
    expect(r.out).toContain('0 intact, 1 tampered');
    expect(r.out).toContain('2 usage or I/O error, 3 intact but unanchored');
  });

  it('tamper 32: exits with the documented code for every failure class', async () => {
    const cases: [string, (l: Awaited<ReturnType<typeof setup>>) => void, string[], number, string][] = [
      ['intact', () => {}, [], 0, 'intact: 30 records'],
      ['unanchored', () => {}, ['--no-anchor'], 3, 'intact but unanchored'],
      ['strict unanchored', () => {}, ['--no-anchor', '--strict'], 1, 'unanchored'],
      [
        'hash_mismatch',
        (l) =>
          writeLines(
            l.dir,
            FILE,
            l.lines.map((line, i) => (i === 4 ? line.replace('read_file', 'read_fila') : line)),
          ),
        [],
        1,
        'TAMPERED at seq 5: hash_mismatch',
      ],
      [
        'prev_mismatch',
        (l) =>
          writeLines(
            l.dir,
            FILE,
            l.lines.map((line, i) => (i === 4 ? reencode({ ...recordOf(line), tier: 'T0' }) : line)),
          ),
        [],
        1,
        'TAMPERED at seq 6: prev_mismatch',
      ],
      [
        'seq_gap',
        (l) =>
          writeLines(
            l.dir,
            FILE,
            l.lines.filter((_, i) => i !== 4),
          ),
        [],
        1,
        'TAMPERED at seq 5: seq_gap',
      ],
      [
        'bad_json',
        (l) =>
          writeLines(
            l.dir,
            FILE,
            l.lines.map((line, i) => (i === 4 ? line.slice(1) : line)),
          ),
        [],
        1,
        'TAMPERED at seq 5: bad_json',
      ],
      [
        'schema',
        (l) =>
          writeLines(
            l.dir,
            FILE,
            l.lines.map((line, i) => (i === 4 ? reencode({ ...recordOf(line), extra: 1 }) : line)),
          ),
        [],
        1,
        'TAMPERED at seq 5: schema',
      ],
      [
        'cp_sig',
        (l) => {
          const text = readFileSync(join(l.dir, CHECKPOINTS_FILE), 'utf8');
          writeFileSync(join(l.dir, CHECKPOINTS_FILE), text.replace('time 2026', 'time 2027'));
        },
        [],
        1,
        ': cp_sig',
      ],
      [
        'cp_root',
        (l) => writeLines(l.dir, FILE, l.lines.slice(0, 25)),
        ['--no-anchor'],
        1,
        'TAMPERED at seq 26: cp_root',
      ],
      ['cp_chain', (l) => resignCheckpoints(l.dir, l.lines, [20, 10, 30]), ['--no-anchor'], 1, ': cp_chain'],
      [
        'truncated_below_anchor',
        (l) => {
          writeLines(l.dir, FILE, l.lines.slice(0, 20));
          writeLines(l.dir, CHECKPOINTS_FILE, readLines(l.dir, CHECKPOINTS_FILE).slice(0, 2));
        },
        [],
        1,
        'TAMPERED at seq 21: truncated_below_anchor',
      ],
      [
        'anchor_root_mismatch',
        (l) => {
          const forged = rechain(
            l.lines.map((line, i) => (i === 0 ? reencode({ ...recordOf(line), tier: 'T0' }) : line)),
          );
          writeLines(l.dir, FILE, forged);
          resignCheckpoints(l.dir, forged, [10, 20, 30]);
        },
        [],
        1,
        'TAMPERED at seq 10: anchor_root_mismatch',
      ],
      [
        'torn_tail',
        (l) => truncateSync(join(l.dir, FILE), readFileSync(join(l.dir, FILE)).length - 10),
        ['--no-anchor'],
        1,
        'TAMPERED at seq 30: torn_tail',
      ],
      [
        'uncovered_tail',
        (l) => writeLines(l.dir, CHECKPOINTS_FILE, readLines(l.dir, CHECKPOINTS_FILE).slice(0, 2)),
        ['--no-anchor', '--strict'],
        1,
        'TAMPERED at seq 21: uncovered_tail',
      ],
      ['usage: no ledger', (l) => rmSync(l.dir, { recursive: true }), [], 2, 'No audit ledger directory'],
    ];
    for (const [name, tamper, flags, code, message] of cases) {
      const l = await setup();
      tamper(l);
      const anchor = flags.includes('--no-anchor') ? [] : ['--anchor', l.anchor];
      const args = [
        'audit',
        'verify',
        '--data-dir',
        l.dataDir,
        ...anchor,
        ...flags.filter((f) => f !== '--no-anchor'),
      ];
      const r = await run(args);
      expect(r.code, name).toBe(code);
      expect(r.out + r.err, name).toContain(message);
    }
  });

  it('prints the report as JSON, reads --ledger and --pubkey, and refuses a bad key as a usage error', async () => {
    const l = await setup(12);
    const pubkey = join(l.root, 'trusted.pub');
    writeFileSync(pubkey, readFileSync(join(l.dir, VERIFIER_KEY_FILE)));
    rmSync(join(l.dir, VERIFIER_KEY_FILE));
    const r = await run([
      'audit',
      'verify',
      '--ledger',
      l.dir,
      '--pubkey',
      pubkey,
      '--anchor',
      l.anchor,
      '--json',
    ]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toEqual({
      status: 'intact',
      records: 12,
      checkpoints: 2,
      lastCheckpointSize: 12,
      anchored: 12,
    });
    // Without a key there is nothing to check the signatures with.
    expect((await run(['audit', 'verify', '--ledger', l.dir])).code).toBe(2);
    writeFileSync(pubkey, 'not a key');
    const bad = await run(['audit', 'verify', '--ledger', l.dir, '--pubkey', pubkey]);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('Malformed signed-note verifier key');
  });
});

describe('switchboard audit tail and show', () => {
  it('tail shows the last records as a table, or as stored lines with --json', async () => {
    const l = await setup(30);
    const r = await run(['audit', 'tail', '-n', '3', '--data-dir', l.dataDir]);
    expect(r.code).toBe(0);
    const lines = r.out.trimEnd().split('\n');
    expect(lines[0]).toMatch(
      /^SEQ\s+TIME \(UTC\)\s+CLIENT\s+UPSTREAM\s+METHOD\s+TARGET\s+TIER\s+DECISION\s+DURATION$/,
    );
    expect(lines.slice(1).map((line) => line.trim().split(/\s+/)[0])).toEqual(['28', '29', '30']);
    expect(lines[3]).toMatch(
      /^\s*30\s+2026-06-14 12:00:00\.\d{3}\s+alice\s+files\s+tools\/call\s+read_file\s+T2\s+allowed\s+31\.5ms$/,
    );
    const json = await run(['audit', 'tail', '-n', '2', '--json', '--ledger', l.dir]);
    expect(json.out).toBe(`${l.lines.slice(-2).join('\n')}\n`);
  });

  it('tail neutralizes control characters from the ledger', async () => {
    const { dir: root, cleanup } = tempDir();
    cleanups.push(cleanup);
    await writeLedger(root, 1, { event: (i) => sampleEvent(i, { target: 'evil\u001b[31mred\u009b' }) });
    const r = await run(['audit', 'tail', '--ledger', root]);
    expect(r.out).toContain('evil\\u001b[31mred\\u009b');
    expect(r.out).not.toContain('\u001b');
  });

  it('show prints one record with its file and line, or exits 1 when there is none', async () => {
    const l = await setup(30);
    const r = await run(['audit', 'show', '17', '--data-dir', l.dataDir]);
    expect(r.code).toBe(0);
    expect(r.out.split('\n')[0]).toBe(`${FILE}:17`);
    expect(JSON.parse(r.out.slice(r.out.indexOf('\n') + 1))).toEqual(recordOf(l.lines[16] as string));
    expect((await run(['audit', 'show', '17', '--json', '--ledger', l.dir])).out).toBe(`${l.lines[16]}\n`);
    const missing = await run(['audit', 'show', '31', '--ledger', l.dir]);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain('no record 31');
    expect((await run(['audit', 'show', 'zero', '--ledger', l.dir])).code).not.toBe(0);
  });

  it('tail and show exit 2 when there is no ledger', async () => {
    const { dir: root, cleanup } = tempDir();
    cleanups.push(cleanup);
    expect((await run(['audit', 'tail', '--data-dir', root])).code).toBe(2);
    expect((await run(['audit', 'show', '1', '--data-dir', root])).code).toBe(2);
  });
});

describe('switchboard audit prove and check-proof', () => {
  it('proves a record; the third party checks the proof with the verifier key only', async () => {
    const l = await setup(30);
    const human = await run(['audit', 'prove', '7', '--data-dir', l.dataDir]);
    expect(human.code).toBe(0);
    expect(human.out).toContain('record 7 is leaf 6 of the tree of 30 records');
    const r = await run(['audit', 'prove', '7', '--json', '--data-dir', l.dataDir]);
    const doc = JSON.parse(r.out) as { tree_size: number; line: string };
    expect(doc).toMatchObject({ seq: 7, index: 6, tree_size: 30, line: l.lines[6] });
    const proof = join(l.root, 'proof.json');
    writeFileSync(proof, r.out);
    const pubkey = join(l.dir, VERIFIER_KEY_FILE);
    const ok = await run(['audit', 'check-proof', proof, '--pubkey', pubkey]);
    expect(ok).toMatchObject({
      code: 0,
      out: expect.stringContaining('valid: record 7 is in the tree of 30 records'),
    });
    // Against an earlier checkpoint, by size.
    const earlier = await run(['audit', 'prove', '7', '--size', '10', '--json', '--ledger', l.dir]);
    expect(JSON.parse(earlier.out)).toMatchObject({ tree_size: 10 });
    // A doctored document does not check.
    writeFileSync(proof, r.out.replace('\\"tier\\":\\"T1\\"', '\\"tier\\":\\"T0\\"'));
    const bad = await run(['audit', 'check-proof', proof, '--pubkey', pubkey, '--json']);
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.out)).toMatchObject({ ok: false, reason: 'leaf_mismatch' });
    expect((await run(['audit', 'check-proof', join(l.root, 'nope.json'), '--pubkey', pubkey])).code).toBe(2);
    expect((await run(['audit', 'check-proof', proof])).code).not.toBe(0);
  });

  it('prove exits 2 for a record no checkpoint covers yet, saying when one is due, and 1 for no record', async () => {
    const l = await setup(15);
    writeLines(l.dir, CHECKPOINTS_FILE, readLines(l.dir, CHECKPOINTS_FILE).slice(0, -1));
    const r = await run(['audit', 'prove', '12', '--data-dir', l.dataDir]);
    expect(r.code).toBe(2);
    expect(r.err).toContain(
      'Record 12 exists but is not covered by a checkpoint yet (the last one covers 10',
    );
    expect(r.err).toContain('audit.checkpoint.every records (default 1000)');
    const missing = await run(['audit', 'prove', '16', '--data-dir', l.dataDir]);
    expect(missing.code).toBe(1);
    expect(missing.err).toBe('switchboard: There is no record 16: the ledger holds records 1 to 15\n');
  });
});

describe('switchboard audit, read by a person (issue 22)', () => {
  it('verify on an unanchored ledger says what exit 3 means and how to anchor', async () => {
    const l = await setup(3);
    const r = await run(['audit', 'verify', '--data-dir', l.dataDir]);
    expect(r.code).toBe(3);
    expect(r.out).toContain('intact but unanchored: 3 records');
    expect(r.out).toContain('Exit status 3: every record, the hash chain and the signed checkpoints check');
    expect(r.out).toContain('set audit.anchor in the configuration');
    expect(r.out).toContain(`copy ${l.dir}/checkpoints.jsonl somewhere this host cannot write`);
    expect(r.out).toContain('switchboard audit verify --anchor <the copy>');
    // The copy it suggests does anchor it.
    const copy = join(l.root, 'copy.jsonl');
    writeFileSync(copy, readFileSync(join(l.dir, CHECKPOINTS_FILE)));
    const anchored = await run(['audit', 'verify', '--data-dir', l.dataDir, '--anchor', copy]);
    expect(anchored.code, anchored.out).toBe(0);
  });

  it('verify on a ledger without records yet says that nothing can have been cut off', async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    await writeLedger(dir, 0);
    const r = await run(['audit', 'verify', '--ledger', dir]);
    expect(r.code).toBe(3);
    expect(r.out).toContain('intact but unanchored: 0 records, 0 checkpoints');
    expect(r.out).toContain(
      'Exit status 3: the ledger holds no records yet, so nothing can have been cut off',
    );
    expect(r.out).toContain('set audit.anchor in the configuration');
  });

  it('tail shows a call the client cancelled as cancelled, an upstream error as error', async () => {
    const { dir: root, cleanup } = tempDir();
    cleanups.push(cleanup);
    await writeLedger(root, 2, {
      event: (i) =>
        sampleEvent(i, {
          decision: 'error',
          error: i === 1 ? CANCELLED_BY_CLIENT : 'upstream said no',
        }),
    });
    const lines = (await run(['audit', 'tail', '--ledger', root])).out.trimEnd().split('\n');
    expect(lines[1]).toMatch(/\scancelled\s/);
    expect(lines[2]).toMatch(/\serror\s/);
  });

  it('finds the ledger of a stdio wrapper from the data directory, and asks when there are several', async () => {
    const { dir: dataDir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const one = join(dataDir, 'audit', 'stdio', 'everything');
    await writeLedger(one, 3);
    const tail = await run(['audit', 'tail', '--json', '--data-dir', dataDir]);
    expect(tail.code, tail.err).toBe(0);
    expect(tail.out).toBe(`${readLines(one).join('\n')}\n`);
    expect(tail.err).toBe(`switchboard: reading the ledger of the stdio wrapper at ${one}\n`);
    expect((await run(['audit', 'verify', '--data-dir', dataDir])).code).toBe(3);
    expect((await run(['audit', 'prove', '2', '--data-dir', dataDir])).code).toBe(0);
    const two = join(dataDir, 'audit', 'stdio', 'everything-2');
    await writeLedger(two, 1);
    const several = await run(['audit', 'tail', '--data-dir', dataDir]);
    expect(several.code).toBe(2);
    expect(several.err).toContain('2 stdio wrappers wrote one');
    expect(several.err).toContain(`choose one with --ledger: ${one}, ${two}`);
    // A ledger of its own (serve's) is always the one read.
    await writeLedger(join(dataDir, 'audit'), 1);
    const own = await run(['audit', 'tail', '--json', '--data-dir', dataDir]);
    expect(own).toMatchObject({ code: 0, err: '' });
  });
});
