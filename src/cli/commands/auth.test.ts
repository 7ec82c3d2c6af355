import { Readable } from 'node:stream';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createAuthenticator } from '../../auth/authenticator.js';
import { hashToken } from '../../auth/token-hash.js';
import { parseConfigText } from '../../config/load.js';
import { silentLogger } from '../../observe/logger.js';
import { Metrics } from '../../observe/metrics.js';
import { type CliRun, runCli } from '../test-support/run-cli.js';
import { registerAuthCommands } from './auth.js';

const run = (args: readonly string[], program?: Command): Promise<CliRun> =>
  runCli(args, program === undefined ? {} : { program });

/** A program with only the auth commands, reading `input` as stdin. */
function withStdin(input: string | string[]): Command {
  const program = new Command('switchboard');
  registerAuthCommands(program, { stdin: Readable.from(Array.isArray(input) ? input : [input]) });
  return program;
}

describe('switchboard auth token', () => {
  it('prints a new token first, then a configuration entry holding only its hash', async () => {
    const r = await run(['auth', 'token', '--principal', 'alice', '--role', 'approver', '--role', 'ops']);
    expect(r.code).toBe(0);
    const [token, blank, ...yaml] = r.out.split('\n');
    expect(token).toMatch(/^sbt_[A-Za-z0-9_-]{43}$/);
    expect(blank).toBe('');
    const doc = parse(yaml.join('\n')) as { auth: { tokens: unknown[] } };
    expect(doc.auth.tokens).toEqual([
      { principal: 'alice', sha256: hashToken(token!), roles: ['approver', 'ops'] },
    ]);
    expect(r.out.split(token!)).toHaveLength(2); // the token appears once, the YAML has only the hash
    expect(r.err).toContain('shown only once');
    expect(r.err).not.toContain(token!);
  });

  it('makes a different token every time', async () => {
    const a = await run(['auth', 'token', '--principal', 'alice']);
    const b = await run(['auth', 'token', '--principal', 'alice']);
    expect(a.out.split('\n')[0]).not.toBe(b.out.split('\n')[0]);
  });

  it('prints YAML the configuration accepts, and the token authenticates as the principal', async () => {
    const r = await run(['auth', 'token', '--principal', 'svc@build:1', '--role', 'true']);
    const token = r.out.split('\n')[0]!;
    const yaml = r.out.slice(r.out.indexOf('#'));
    const result = parseConfigText(`${yaml}upstreams:\n  everything:\n    command: npx\n`, {
      baseDir: '/etc/switchboard',
      env: {},
    });
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    expect(result.config.auth?.tokens).toEqual([
      { principal: 'svc@build:1', sha256: hashToken(token), roles: ['true'] },
    ]);
    const authenticate = createAuthenticator(result.config.auth, {
      logger: silentLogger,
      metrics: new Metrics(),
    });
    expect(await authenticate({ rawHeaders: ['Authorization', `Bearer ${token}`] })).toEqual({
      ok: true,
      principal: 'svc@build:1',
      roles: ['true'],
    });
  });

  it('prints an empty role list without --role', async () => {
    const r = await run(['auth', 'token', '--principal', 'bob']);
    expect(r.out).toContain('roles: []');
  });

  it('requires a principal, and names the configuration accepts', async () => {
    expect((await run(['auth', 'token'])).code).not.toBe(0);
    const bad = await run(['auth', 'token', '--principal', 'alice smith']);
    expect(bad.code).not.toBe(0);
    expect(bad.err).toContain('expected a name of letters, digits');
    expect(bad.out).toBe('');
    expect((await run(['auth', 'token', '--principal', 'alice', '--role', '-x'])).code).not.toBe(0);
  });
});

describe('switchboard auth hash', () => {
  it('prints the SHA-256 of --token', async () => {
    const r = await run(['auth', 'hash', '--token', 'sbt_abc']);
    expect(r).toEqual({ out: `${hashToken('sbt_abc')}\n`, err: '', code: 0 });
  });

  it('reads the token from stdin, ignoring the trailing newline', async () => {
    const r = await run(['auth', 'hash'], withStdin(['sbt_a', 'bc\n']));
    expect(r).toEqual({ out: `${hashToken('sbt_abc')}\n`, err: '', code: 0 });
  });

  it('fails with exit 2 without a token', async () => {
    const r = await run(['auth', 'hash'], withStdin('\n'));
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
    expect(r.err).toContain('no token given');
  });

  it('fails with exit 2 when stdin is far larger than a token', async () => {
    const r = await run(['auth', 'hash'], withStdin('a'.repeat(70_000)));
    expect(r.code).toBe(2);
    expect(r.out).toBe('');
  });

  it('warns when the token could never be sent in a Bearer header', async () => {
    const r = await run(['auth', 'hash', '--token', 'two words']);
    expect(r.out).toBe(`${hashToken('two words')}\n`);
    expect(r.err).toContain('warning');
  });

  it('agrees with auth token', async () => {
    const made = await run(['auth', 'token', '--principal', 'alice']);
    const token = made.out.split('\n')[0]!;
    const hashed = await run(['auth', 'hash'], withStdin(`${token}\n`));
    expect(made.out).toContain(`sha256: ${hashed.out.trim()}`);
  });
});

describe('switchboard --help', () => {
  it('lists the auth command', async () => {
    const r = await run(['--help']);
    expect(r.out).toMatch(/^\s+auth\b/m);
  });
});
