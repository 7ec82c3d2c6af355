import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TAPE_VERSION } from '../../tape/tape-format.js';
import { writeTape } from '../../tape/tape-writer.js';
import { runCli } from '../test-support/run-cli.js';
import { defaultUpdatePath } from './tape-check.js';

const dir = mkdtempSync(join(tmpdir(), 'switchboard-tape-check-cli-'));
const tape = join(dir, 't.tape.jsonl');
writeFileSync(
  tape,
  writeTape({
    header: {
      tape: TAPE_VERSION,
      kind: 'header',
      recordedAt: '2026-11-28T10:00:00.000Z',
      source: { via: 'record', gateway: 'test' },
      protocolVersion: '2025-11-25',
      server: { initialize: {} },
      redactions: [],
      incomplete: [],
    },
    messages: [],
  }),
);

describe('switchboard tape check: usage', () => {
  it.each([
    [['tape', 'check', tape], 'give the server to run after --'],
    [['tape', 'check', tape, '--url', 'http://127.0.0.1:1/mcp', '--', 'node'], 'one of them'],
    [['tape', 'check', tape, '-o', 'x', '--', 'node'], '-o, --force and --keep-secrets go with --update'],
    [['tape', 'check', tape, '--ignore', 'result/x', '--', 'node'], 'is not a JSON Pointer'],
    [['tape', 'check', join(dir, 'absent.jsonl'), '--', 'node'], 'absent.jsonl'],
    [['tape', 'check', tape, '--update', '-o', tape, '--', 'node'], 'exists (--force overwrites it)'],
  ])('%j exits 2: %s', async (args, message) => {
    const r = await runCli(args);
    expect(r.code).toBe(2);
    expect(r.err).toContain(message);
  });

  it('writes --update beside the tape by default, .updated before the extension', () => {
    expect(defaultUpdatePath('tapes/everything.tape.jsonl')).toBe('tapes/everything.tape.updated.jsonl');
    expect(defaultUpdatePath('tapes.d/recording')).toBe('tapes.d/recording.updated');
    expect(defaultUpdatePath('.tape')).toBe('.tape.updated');
  });
});
