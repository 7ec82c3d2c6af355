import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_TIMEOUTS } from '../core/correlation-table.js';
import { SbErrorCode } from '../errors/switchboard-error.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../gateways/stdio-gateway.js';
import { DEFAULT_MAX_PAYLOAD_BYTES } from '../trace/stored-payload.js';
import { DEFAULT_BACKOFF } from '../transports/backoff.js';
import { MEMORY_EVENT_STORE_DEFAULTS } from '../transports/http/events/memory-event-store.js';
import { DEFAULTS, DEMO_PACKAGES, defaultConfig, defaultSessionsMode } from './defaults.js';
import type { StdioUpstreamConfig } from './types.js';
import { validateConfig } from './validate.js';

const root = mkdtempSync(join(tmpdir(), 'sb-defaults-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const dataDir = join(root, 'data');
const realResolve = createRequire(import.meta.url).resolve;

/** A resolver that finds server-everything as installed and a fake server-memory package. */
function withFakeMemory(): (specifier: string) => string {
  const dir = join(root, 'node_modules', '@modelcontextprotocol', 'server-memory');
  mkdirSync(join(dir, 'dist'), { recursive: true });
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: DEMO_PACKAGES.memory, bin: { 'mcp-server-memory': 'dist/index.js' } }),
  );
  writeFileSync(join(dir, 'dist', 'index.js'), '');
  return (specifier) =>
    specifier.startsWith(DEMO_PACKAGES.memory) ? join(dir, 'package.json') : realResolve(specifier);
}

const withoutMemory = (specifier: string): string => {
  if (specifier.startsWith(DEMO_PACKAGES.memory)) throw new Error(`Cannot find module '${specifier}'`);
  return realResolve(specifier);
};

describe('DEFAULTS', () => {
  it('agrees with the defaults of the components it configures', () => {
    expect(DEFAULTS.upstream.maxMessageBytes).toBe(DEFAULT_MAX_MESSAGE_BYTES);
    expect(DEFAULTS.upstream.restart.initialDelayMs).toBe(DEFAULT_BACKOFF.initialMs);
    expect(DEFAULTS.upstream.restart.maxDelayMs).toBe(DEFAULT_BACKOFF.maxMs);
    expect(DEFAULTS.trace.maxPayloadBytes).toBe(DEFAULT_MAX_PAYLOAD_BYTES);
    expect(DEFAULTS.timeouts.requestMs).toBe(DEFAULT_TIMEOUTS.requestTimeoutMs);
    expect(DEFAULTS.timeouts.maxTotalMs).toBe(DEFAULT_TIMEOUTS.maxTotalTimeoutMs);
    expect(DEFAULTS.timeouts.resetOnProgress).toBe(DEFAULT_TIMEOUTS.resetOnProgress);
    expect(DEFAULTS.resumability.maxEventsPerSession).toBe(MEMORY_EVENT_STORE_DEFAULTS.maxEventsPerSession);
    expect(DEFAULTS.resumability.maxEventAgeMs).toBe(MEMORY_EVENT_STORE_DEFAULTS.maxEventAgeMs);
  });

  it('is frozen, deeply', () => {
    expect(Object.isFrozen(DEFAULTS)).toBe(true);
    expect(Object.isFrozen(DEFAULTS.server)).toBe(true);
    expect(Object.isFrozen(DEFAULTS.server.allowedHosts)).toBe(true);
    expect(Object.isFrozen(DEFAULTS.upstream.restart)).toBe(true);
  });

  it('makes sessions strict only with authentication', () => {
    expect(defaultSessionsMode(true)).toBe('strict');
    expect(defaultSessionsMode(false)).toBe('lenient');
  });
});

describe('defaultConfig', () => {
  it('fronts server-everything with this Node binary, pooled', () => {
    const config = defaultConfig({ dataDir, resolvePackage: withoutMemory });
    expect(config.upstreams).toHaveLength(1);
    const everything = config.upstreams[0] as StdioUpstreamConfig;
    expect(everything).toMatchObject({
      name: 'everything',
      transport: 'stdio',
      command: process.execPath,
      sharing: 'pooled',
      pool: DEFAULTS.upstream.pool,
    });
    expect(everything.args).toHaveLength(2);
    expect(everything.args[0]).toMatch(/server-everything[/\\]dist[/\\]index\.js$/);
    expect(existsSync(everything.args[0]!)).toBe(true);
    expect(everything.args[1]).toBe('stdio');
  });

  it('adds server-memory, keeping its file in the data directory, when it is installed', () => {
    const config = defaultConfig({ dataDir, resolvePackage: withFakeMemory() });
    expect(config.upstreams.map((u) => u.name)).toEqual(['everything', 'memory']);
    const memory = config.upstreams[1] as StdioUpstreamConfig;
    expect(memory).toMatchObject({
      transport: 'stdio',
      command: process.execPath,
      args: [join(root, 'node_modules', '@modelcontextprotocol', 'server-memory', 'dist', 'index.js')],
      env: { MEMORY_FILE_PATH: join(dataDir, 'memory.jsonl') },
      sharing: 'shared',
    });
  });

  it('uses the real resolver by default (memory present or not, as installed)', () => {
    const names = defaultConfig({ dataDir }).upstreams.map((u) => u.name);
    let installed = true;
    try {
      realResolve(`${DEMO_PACKAGES.memory}/package.json`);
    } catch {
      installed = false;
    }
    expect(names).toEqual(installed ? ['everything', 'memory'] : ['everything']);
  });

  it('is what validating the equivalent file gives: every default applied', () => {
    const config = defaultConfig({ dataDir, resolvePackage: withFakeMemory() });
    const [everything, memory] = config.upstreams as StdioUpstreamConfig[];
    const result = validateConfig(
      {
        upstreams: {
          everything: { command: everything!.command, args: everything!.args, sharing: 'pooled' },
          memory: { command: memory!.command, args: memory!.args, env: memory!.env },
        },
      },
      { baseDir: dataDir, env: {} },
    );
    expect(result).toEqual({ ok: true, config, warnings: [] });
  });

  it('makes sessions strict when authentication is configured', () => {
    expect(
      defaultConfig({ dataDir, authConfigured: true, resolvePackage: withoutMemory }).sessions.mode,
    ).toBe('strict');
    expect(defaultConfig({ dataDir, resolvePackage: withoutMemory }).sessions.mode).toBe('lenient');
  });

  it('fails with SB_CONFIG_NOT_FOUND when server-everything is not installed', () => {
    const nothing = (specifier: string): string => {
      throw new Error(`Cannot find module '${specifier}'`);
    };
    expect(() => defaultConfig({ dataDir, resolvePackage: nothing })).toThrow(
      expect.objectContaining({
        code: SbErrorCode.ConfigNotFound,
        message: expect.stringContaining(
          'needs @modelcontextprotocol/server-everything, which is not installed',
        ),
      }),
    );
  });

  it('starts an upstream that answers initialize', async () => {
    const everything = defaultConfig({ dataDir, resolvePackage: withoutMemory })
      .upstreams[0] as StdioUpstreamConfig;
    const child = spawn(everything.command, everything.args, { stdio: ['pipe', 'pipe', 'ignore'] });
    try {
      const answer = new Promise<string>((resolve, reject) => {
        let buffer = '';
        child.stdout.on('data', (chunk: Buffer) => {
          buffer += chunk.toString('utf8');
          const line = buffer.split('\n').find((l) => l.includes('"id":1'));
          if (line !== undefined) resolve(line);
        });
        child.on('error', reject);
        child.on('exit', (code) => reject(new Error(`exited with ${code}`)));
      });
      const initialize = {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'test', version: '0' },
        },
      };
      child.stdin.write(`${JSON.stringify(initialize)}\n`);
      const response = JSON.parse(await answer) as { result?: { serverInfo?: { name?: string } } };
      expect(response.result?.serverInfo?.name).toBeTruthy();
    } finally {
      child.kill();
    }
  });
});
