/**
 * A T2 call must not run when its audit record cannot be written (issue 18, item 7), against the
 * built `switchboard serve`: the upstream (the misbehaving fixture, which counts the calls it
 * receives; `echo` is made T2 by a rule, `stats` T0) must never see a T2 call the gateway refuses,
 * and the client must be told whether its call ran.
 *
 * - `audit.minFreeBytes` set above the real free space of the data directory's file system (the
 *   real `statfs` path, which any machine can run): T2 refused before forwarding, from the start.
 * - On a real full file system: a tiny tmpfs as `audit.dir` (mounting needs root, which CI has;
 *   skipped elsewhere). Below the threshold calls are refused before forwarding and admitted again
 *   once space is freed; with the threshold off, a disk that fills without warning gives the
 *   remaining window (the call ran, and the answer says so), after which calls are refused before
 *   forwarding until space is freed.
 */
import { mkdirSync, rmSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, tempDir } from './support/cli.js';
import { type RunningServe, startServe, stdioUpstreamConfig } from './support/serve.js';
import { answerOf, type InitializedSession, initialize, post, waitUntil } from './support/sse-client.js';
import { canMountTmpfs, fillFileSystem, mountTmpfs, unmountTmpfs } from './support/tmpfs.js';

const MISBEHAVING = join(ROOT, 'test/fixtures/misbehaving-server.mjs');
const MiB = 1024 * 1024;

interface Answer {
  readonly result?: { content?: { text?: string }[] };
  readonly error?: { code: number; message: string; data?: { forwarded?: boolean; reason?: string } };
}

/** The configuration: upstream `m`, `echo` T2 and `stats` T0, with `audit` lines added. */
function config(audit: readonly string[]): string {
  return stdioUpstreamConfig(
    { m: { script: MISBEHAVING } },
    [
      'policy:',
      '  rules:',
      '    - { upstream: m, tool: echo, tier: T2 }',
      '    - { upstream: m, tool: stats, tier: T0 }',
      'audit:',
      ...audit.map((line) => `  ${line}`),
      '',
    ].join('\n'),
  );
}

class Client {
  #next = 10;
  constructor(
    readonly serve: RunningServe,
    readonly session: InitializedSession,
  ) {}

  static async connect(serve: RunningServe): Promise<Client> {
    return new Client(serve, await initialize(serve.url, { version: '2025-11-25' }));
  }

  async call(name: string, args: Record<string, unknown> = {}): Promise<Answer> {
    const id = this.#next++;
    const response = await post(
      this.serve.url,
      { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } },
      this.session.headers,
    );
    expect(response.status, response.text).toBe(200);
    return answerOf<Answer>(response);
  }

  /** How many `echo` calls reached the upstream. */
  async echoesUpstream(): Promise<number> {
    const stats = await this.call('stats');
    const text = stats.result?.content?.[0]?.text;
    if (text === undefined) throw new Error(`stats failed: ${JSON.stringify(stats)}`);
    return (JSON.parse(text) as { calls: Record<string, number> }).calls.echo ?? 0;
  }
}

/** Waits for a gateway log line (pino JSON on stderr) whose message matches. */
function logged(serve: RunningServe, message: RegExp, what: string): Promise<void> {
  return waitUntil(() => message.test(serve.stderr()), 20_000, what, 50);
}

const REFUSED = {
  error: {
    code: -32005,
    message: expect.stringMatching(/^not run: the audit ledger cannot be written/),
    data: { code: 'SB_AUDIT_UNAVAILABLE', forwarded: false },
  },
};

describe('T2 calls and an audit ledger that cannot write, end to end', () => {
  it('refuses T2 before the upstream sees it while free space is below audit.minFreeBytes (real statfs)', async () => {
    const dataDir = tempDir('switchboard-full-disk-');
    const stats = statfsSync(dataDir);
    // Comfortably more than the file system has free, whatever else runs meanwhile.
    const above = stats.bavail * stats.bsize * 2 + 1024 * MiB;
    const serve = await startServe({ dataDir, configYaml: config([`minFreeBytes: ${above}`]) });
    try {
      const client = await Client.connect(serve);
      const refused = await client.call('echo', { message: 'do it' });
      expect(refused).toMatchObject({
        error: { ...REFUSED.error, data: { ...REFUSED.error.data, reason: 'low-space' } },
      });
      expect(refused.error?.message).toContain('its file system is low on free space');
      // T0 still runs, and says the T2 call never reached the upstream.
      expect(await client.echoesUpstream()).toBe(0);
      // The refusal, not recorded in the ledger, is in the gateway's log instead (stderr is read
      // as it comes: the line may arrive after the answer).
      await logged(serve, /refused a T1\+ call before forwarding it/, 'the refusal in the log');
    } finally {
      await serve.stop();
    }
  });

  describe('on a real full file system (tmpfs)', () => {
    const mounts: string[] = [];
    /** A fresh tmpfs of `size`, unmounted after the tests. */
    function tmpfs(size: string): string | undefined {
      const dir = mountTmpfs(size);
      if (dir !== undefined) mounts.push(dir);
      return dir;
    }
    afterAll(() => {
      for (const dir of mounts.splice(0)) unmountTmpfs(dir);
    });
    const canMount = canMountTmpfs();
    const fill = fillFileSystem;

    it.runIf(canMount)(
      'below the threshold: refused before forwarding, and admitted again once space is freed',
      async () => {
        const disk = tmpfs('16m') as string;
        const ledgerDir = join(disk, 'audit');
        mkdirSync(ledgerDir);
        const serve = await startServe({
          configYaml: config([`dir: ${JSON.stringify(ledgerDir)}`, 'minFreeBytes: 4MiB']),
          args: ['--log-level', 'info'],
        });
        try {
          const client = await Client.connect(serve);
          expect(await client.call('echo', { message: 'first' })).toMatchObject({ result: {} });
          // Something else fills the disk, leaving less than the threshold but room to write.
          const filler = fill(disk, 2 * MiB);
          await logged(serve, /free space is below audit.minFreeBytes/, 'the ledger to notice the full disk');
          const refused = await client.call('echo', { message: 'second' });
          expect(refused).toMatchObject({
            error: { ...REFUSED.error, data: { ...REFUSED.error.data, reason: 'low-space' } },
          });
          expect(await client.echoesUpstream()).toBe(1);
          // Space is freed: admitted again.
          rmSync(filler);
          await logged(
            serve,
            /free space is above audit.minFreeBytes again/,
            'the ledger to notice the room',
          );
          expect(await client.call('echo', { message: 'third' })).toMatchObject({ result: {} });
          expect(await client.echoesUpstream()).toBe(2);
        } finally {
          await serve.stop();
        }
      },
    );

    it.runIf(canMount)(
      'threshold off, disk full without warning: every call that runs is recorded or answered so, and calls run again once space is freed',
      async () => {
        const disk = tmpfs('16m') as string;
        const ledgerDir = join(disk, 'audit');
        mkdirSync(ledgerDir);
        const serve = await startServe({
          configYaml: config([`dir: ${JSON.stringify(ledgerDir)}`, 'minFreeBytes: 0']),
          args: ['--log-level', 'info'],
        });
        try {
          const client = await Client.connect(serve);
          expect(await client.call('echo', { message: 'first' })).toMatchObject({ result: {} });
          const filler = fill(disk, 0);
          // The remaining window: nothing said the disk was full before the record's write failed.
          // (The record is made larger than a page: a full tmpfs still takes a write that fits in
          // the last page of the ledger file.)
          const ran = await client.call('echo', { message: 'x'.repeat(16 * 1024) });
          expect(ran).toMatchObject({
            error: {
              code: -32005,
              message: expect.stringMatching(
                /^the call ran: upstream m answered it, .*check before retrying it$/,
              ),
              data: { code: 'SB_AUDIT_UNAVAILABLE', forwarded: true },
            },
          });
          expect(await client.echoesUpstream()).toBe(2);
          // From then on no call runs unrecorded without saying so. Whether the next one runs is
          // not fixed: the failed batch's fragment is cut back, and a small record (the `stats`
          // call's, just above) can fit the room that leaves; that write succeeding makes the ledger
          // healthy again. So a second large call is either refused before forwarding (`forwarded:
          // false`) or runs and is answered "the call ran" (`forwarded: true`), and the upstream's
          // own count agrees with what the answer says.
          const next = await client.call('echo', { message: 'y'.repeat(16 * 1024) });
          expect(next).toMatchObject({ error: { code: -32005, data: { code: 'SB_AUDIT_UNAVAILABLE' } } });
          const forwarded = (next.error?.data as { forwarded?: unknown } | undefined)?.forwarded;
          expect(typeof forwarded).toBe('boolean');
          if (forwarded === false) expect(next).toMatchObject(REFUSED);
          const reached = forwarded === true ? 3 : 2;
          expect(await client.echoesUpstream()).toBe(reached);
          // Space is freed: the ledger's probe (or the next write) notices, and calls run again.
          rmSync(filler);
          let fourth: Awaited<ReturnType<Client['call']>> | undefined;
          await waitUntil(
            async () => {
              fourth = await client.call('echo', { message: 'fourth' });
              return fourth.result !== undefined;
            },
            20_000,
            'a call to run once space is freed',
            100,
          );
          expect(fourth).toMatchObject({ result: {} });
          // The refusals while the ledger recovered never reached the upstream.
          expect(await client.echoesUpstream()).toBe(reached + 1);
        } finally {
          await serve.stop();
        }
      },
    );
  });
});
