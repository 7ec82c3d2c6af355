/**
 * `switchboard audit verify` in worker threads, as built: a ledger past the size where the verifier
 * splits it (8 MiB) is checked by the built worker module (`dist/audit/ledger/verify-worker.js`,
 * found beside the built verifier), and the CLI reports the same with `--threads 1` and
 * `--threads 2`, intact and after a record in the part a worker checks is edited.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { writeLedger } from '../src/audit/ledger/test-support/ledger-fixture.js';
import { ROOT, runCli, tempDir } from './support/cli.js';

const RECORDS = 20_000;
let dir: string;

/** Each record with an `args` of some 300 bytes, as a busy gateway's would be. */
const event = (i: number) => ({
  session_id: `session-${i % 7}`,
  client_id: 'alice',
  request_id: i,
  upstream: 'files',
  method: 'tools/call',
  target: 'read_file',
  tier: 'T1' as const,
  decision: 'allowed' as const,
  args: { path: `/srv/data/${i}.txt`, note: 'n'.repeat(300) },
  output: `content ${i}`,
  duration_ms: 2,
});

beforeAll(async () => {
  dir = join(tempDir('switchboard-verify-'), 'audit');
  await writeLedger(dir, RECORDS, { checkpointEvery: 1000, event });
}, 120_000);

describe('audit verify in worker threads (built)', () => {
  it('the built verifier hands segments to the built worker, and takes them', async () => {
    const { LogWalk } = (await import(
      pathToFileURL(join(ROOT, 'dist/audit/ledger/log-walk.js')).href
    )) as typeof import('../src/audit/ledger/log-walk.js');
    const { listLedgerFiles } = await import('../src/audit/ledger/ledger-paths.js');
    const files = await listLedgerFiles(dir);
    const defaultWorker = { url: pathToFileURL(join(ROOT, 'dist/audit/ledger/verify-worker.js')) };
    const walk = await new LogWalk(dir, files, [], []).run({
      threads: 2,
      minBytes: 8 * 1024 * 1024,
      maxSegmentBytes: 2 * 1024 * 1024,
      worker: defaultWorker,
    });
    // About 9 MiB in segments of at most 2 MiB. How many the worker takes from the back before this
    // thread, walking from the front, meets it depends on their speeds (log-walk.ts): on a loaded
    // machine a worker that is slow to start may finish only one. At least one, taken whole.
    expect(walk.segments.accepted).toBeGreaterThanOrEqual(1);
    expect(walk.segments.accepted).toBe(walk.segments.planned);
    expect(walk.records).toBe(RECORDS);
  });

  it('reports the same with one thread and two, intact and tampered', async () => {
    const verify = (threads: number) =>
      runCli(['audit', 'verify', '--ledger', dir, '--threads', String(threads), '--json']);
    const [one, two] = [await verify(1), await verify(2)];
    expect(one.code).toBe(3); // intact but unanchored: no anchor given
    expect(JSON.parse(one.stdout)).toMatchObject({ status: 'unanchored', records: RECORDS });
    expect(two.stdout).toBe(one.stdout);
    expect(two.code).toBe(one.code);

    // Record 15,000 (in the second worker's part) gets another target.
    const file = join(dir, 'ledger-000001.jsonl');
    const text = readFileSync(file, 'utf8');
    const at = text.indexOf('"seq":15000,');
    const edited = text.indexOf('"target":"read_file"', at);
    writeFileSync(file, `${text.slice(0, edited)}"target":"read_fild"${text.slice(edited + 20)}`);
    const [bad1, bad2] = [await verify(1), await verify(2)];
    expect(bad1.code).toBe(1);
    expect(JSON.parse(bad1.stdout).firstBreak).toMatchObject({ seq: 15_000, reason: 'hash_mismatch' });
    expect(bad2.stdout).toBe(bad1.stdout);
    expect(bad2.code).toBe(1);
    expect((await runCli(['audit', 'verify', '--ledger', dir, '--threads', '0'])).code).toBe(2);
  }, 60_000);
});
