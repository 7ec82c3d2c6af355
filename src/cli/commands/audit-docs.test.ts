/**
 * docs/audit-ledger.md promises that a third party can check the ledger without Switchboard: it
 * prints a Python chain checker and `check_proof.py` (standard library only), then two OpenSSL
 * commands for the checkpoint signature. This runs exactly the code blocks the document prints,
 * against a ledger written by the real writer and a proof printed by `switchboard audit prove`,
 * so that the document cannot drift from the format. Skipped, saying so, where `python3` (or, for
 * the signature step only, `openssl`) is not installed.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ledgerFileName, VERIFIER_KEY_FILE } from '../../audit/ledger/ledger-paths.js';
import {
  readLines,
  tempDir,
  writeLedger,
  writeLines,
} from '../../audit/ledger/test-support/ledger-fixture.js';
import { runCli } from '../test-support/run-cli.js';

const DOC = join(import.meta.dirname, '../../../docs/audit-ledger.md');

function installed(command: string, versionArgs: readonly string[]): boolean {
  return spawnSync(command, versionArgs, { stdio: 'ignore' }).status === 0;
}
const PYTHON = installed('python3', ['--version']);
const OPENSSL = installed('openssl', ['version']);
if (!PYTHON) console.warn('skipped: the docs/audit-ledger.md Python checkers (python3 is not installed)');

/** The fenced blocks of `language` in the document, in order. */
function blocks(language: string): string[] {
  const found: string[] = [];
  const fence = new RegExp(`^\`\`\`${language}\\n([\\s\\S]*?)^\`\`\`$`, 'gm');
  for (const match of readFileSync(DOC, 'utf8').matchAll(fence)) found.push(match[1] as string);
  return found;
}

function run(command: string, args: readonly string[], cwd: string) {
  const r = spawnSync(command, args, { cwd, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

let cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups) cleanup();
  cleanups = [];
});

async function ledger() {
  const { dir: root, cleanup } = tempDir('sb-audit-docs-');
  cleanups.push(cleanup);
  const dataDir = join(root, 'data');
  const dir = join(dataDir, 'audit');
  // Non-ASCII in a member: the checkers compare bytes, so UTF-8 handling is part of the check.
  await writeLedger(dir, 13, {
    checkpointEvery: 13,
    event: (i) => ({
      session_id: `session-${i % 2}`,
      client_id: 'zoë',
      request_id: i,
      upstream: 'files',
      method: 'tools/call',
      target: 'read_file',
      tier: 'T1',
      decision: 'allowed',
      args: { path: `/srv/données/${i}.txt` },
      output: `contents of ${i}`,
      duration_ms: 1.5 + i,
      trace_id: `trace-${i}`,
    }),
  });
  return { root, dataDir, dir };
}

describe.skipIf(!PYTHON)('the checkers printed in docs/audit-ledger.md', () => {
  it('the document prints the chain checker and check_proof.py', () => {
    const python = blocks('python');
    expect(python).toHaveLength(2);
    expect(python[0]).toContain('print("chain OK")');
    expect(python[1]).toMatch(/^# check_proof\.py proof\.json checkpoint\.pub/);
  });

  it('the chain checker accepts the writer’s ledger and rejects an edited record', async () => {
    const l = await ledger();
    const [checker] = blocks('python');
    writeFileSync(join(l.root, 'check_chain.py'), checker as string);
    const file = join(l.dir, ledgerFileName(1));
    expect(run('python3', ['check_chain.py', file], l.root)).toMatchObject({ code: 0, out: 'chain OK\n' });
    const lines = readLines(l.dir);
    writeLines(
      l.dir,
      ledgerFileName(1),
      lines.map((line, i) => (i === 6 ? line.replace('"tier":"T1"', '"tier":"T0"') : line)),
    );
    const edited = run('python3', ['check_chain.py', file], l.root);
    expect(edited.code).not.toBe(0);
    expect(edited.err).toContain('AssertionError');
  });

  it('check_proof.py checks a proof from `audit prove`, and OpenSSL its signature', async () => {
    const l = await ledger();
    const [, checker] = blocks('python');
    writeFileSync(join(l.root, 'check_proof.py'), checker as string);
    const proved = await runCli(['audit', 'prove', '6', '--json', '--data-dir', l.dataDir]);
    expect(proved.code, proved.err).toBe(0);
    writeFileSync(join(l.root, 'proof.json'), proved.out);
    const pubkey = join(l.dir, VERIFIER_KEY_FILE);
    const checked = run('python3', ['check_proof.py', 'proof.json', pubkey], l.root);
    expect(checked.code, checked.err).toBe(0);
    expect(checked.out).toMatch(
      /^record 6 is leaf 5 of the 13-record tree of switchboard\/audit\/[0-9a-f]{16}:\n/,
    );
    expect(checked.out).toContain('hashes OK; check the signature with openssl');
    if (OPENSSL) {
      // The document's two commands, as printed after `python3 check_proof.py ...`.
      const shell = blocks('sh').find((b) => b.includes('python3 check_proof.py')) as string;
      const commands = shell
        .split('\n')
        .filter((line) => line.startsWith('$ openssl'))
        .map((line) => line.slice(2).split(' '));
      expect(commands).toHaveLength(2);
      for (const [command, ...args] of commands) {
        const r = run(command as string, args, l.root);
        expect(r.code, r.err).toBe(0);
        if (args[0] === 'pkeyutl') expect(r.out).toContain('Signature Verified Successfully');
      }
    } else {
      console.warn('skipped: the OpenSSL signature step of docs/audit-ledger.md (openssl is not installed)');
    }
    // A doctored record does not check.
    writeFileSync(
      join(l.root, 'proof.json'),
      proved.out.replace('\\"tier\\":\\"T1\\"', '\\"tier\\":\\"T0\\"'),
    );
    const doctored = run('python3', ['check_proof.py', 'proof.json', pubkey], l.root);
    expect(doctored.code).not.toBe(0);
    expect(doctored.err).toContain('AssertionError');
  });
});
