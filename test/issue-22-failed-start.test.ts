/**
 * Issue 22: a `switchboard serve` that cannot start (an invalid configuration, its port taken)
 * leaves nothing on disk and starts no upstream. The upstream is `marker-server.mjs`, which
 * writes a file the moment it runs; a gateway that does start writes it (the control), so the
 * test can tell.
 */
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, runCli, tempDir } from './support/cli.js';
import { startServe, stdioUpstreamConfig } from './support/serve.js';

const MARKER_SERVER = join(ROOT, 'test/fixtures/marker-server.mjs');

describe('a failed start creates nothing and starts no upstream (issue 22)', () => {
  const root = tempDir('sb-issue22-start-');
  const marker = join(root, 'upstream-started');
  const config = join(root, 'switchboard.yaml');
  const dataDir = join(root, 'data');
  let taken: Server;
  let port = 0;

  beforeAll(async () => {
    writeFileSync(config, stdioUpstreamConfig({ marked: { script: MARKER_SERVER, args: [marker] } }));
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    port = (taken.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => taken.close(resolve));
    rmSync(root, { recursive: true, force: true });
  });

  it('an invalid configuration: exit 1, no data directory, no upstream', async () => {
    const bad = join(root, 'bad.yaml');
    writeFileSync(
      bad,
      `${stdioUpstreamConfig({ marked: { script: MARKER_SERVER, args: [marker] } })}servr: {}\n`,
    );
    const r = await runCli(['serve', '--config', bad, '--port', '0', '--data-dir', dataDir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('servr');
    expect(existsSync(dataDir)).toBe(false);
    expect(existsSync(marker)).toBe(false);
  });

  it('a port in use: exit 1 with a clear message, no data directory, no upstream', async () => {
    const r = await runCli(['serve', '--config', config, '--port', String(port), '--data-dir', dataDir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`127.0.0.1:${port} is already in use`);
    expect(existsSync(dataDir)).toBe(false);
    expect(existsSync(marker)).toBe(false);
  });

  it('the control: the same configuration on a free port starts the upstream and fills the data directory', async () => {
    const serve = await startServe({ args: ['--config', config], dataDir });
    try {
      expect(existsSync(marker)).toBe(true);
      expect(existsSync(join(dataDir, 'trace.db'))).toBe(true);
      // The failed starts before it left nothing for this start to warn about.
      expect(serve.stderr()).not.toContain('state.json');
    } finally {
      await serve.stop();
    }
  });
});
