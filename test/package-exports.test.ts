/**
 * The package's public surface, as a user imports it: every subpath of the exports map resolves
 * from the built package, exposes what the README promises, and nothing pulls in a socket, a file
 * or a child process at import time.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './support/cli.js';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  exports: Record<string, { import?: string; types?: string } | string>;
};

describe('the exports map', () => {
  it('points every subpath at a built file with types', () => {
    for (const [subpath, target] of Object.entries(pkg.exports)) {
      if (typeof target === 'string') continue;
      expect(target.import, subpath).toMatch(/^\.\/dist\/.+\.js$/);
      expect(target.types, subpath).toMatch(/^\.\/dist\/.+\.d\.ts$/);
      expect(() => readFileSync(join(ROOT, target.import!)), subpath).not.toThrow();
      expect(() => readFileSync(join(ROOT, target.types!)), subpath).not.toThrow();
    }
  });

  it('exposes what the README shows', async () => {
    const root = (await import('switchboard-mcp')) as Record<string, unknown>;
    const envelope = (await import('switchboard-mcp/envelope')) as Record<string, unknown>;
    const meup = (await import('switchboard-mcp/meup')) as Record<string, unknown>;
    const jsonrpc = (await import('switchboard-mcp/jsonrpc')) as Record<string, unknown>;
    const core = (await import('switchboard-mcp/core')) as Record<string, unknown>;
    expect(Object.keys(root).sort()).toEqual(
      [
        'CorrelationTable',
        'MCP_REVISIONS',
        'MessageEnvelope',
        'Router',
        'SbErrorCode',
        'SwitchboardError',
        'decodeMeupEnvelope',
        'encodeMeupEnvelope',
        'getSingleCorrelation',
        'parseMeupEnvelope',
        'parseMessage',
        'parsePayload',
        'serializeMeupEnvelope',
      ].sort(),
    );
    expect(typeof envelope.MessageEnvelope).toBe('function');
    expect(typeof envelope.reverseDirection).toBe('function');
    for (const name of [
      'decodeMeupEnvelope',
      'getSingleCorrelation',
      'contextParent',
      'isAncestorContext',
      'subtree',
    ]) {
      expect(typeof meup[name], name).toBe('function');
    }
    expect(typeof jsonrpc.parsePayload).toBe('function');
    expect(typeof core.CorrelationTable).toBe('function');
    expect(typeof core.Router).toBe('function');
  });

  it('a built envelope behaves as documented through the package', async () => {
    const { MessageEnvelope } = (await import(
      'switchboard-mcp/envelope'
    )) as typeof import('../src/envelope/index.js');
    const request = MessageEnvelope.of({ jsonrpc: '2.0', id: 1, method: 'ping' }).withDirection(
      'client->server',
    );
    const response = MessageEnvelope.responseTo(request, { jsonrpc: '2.0', id: 1, result: {} });
    expect(response.direction).toBe('server->client');
    expect(Object.isFrozen(response)).toBe(true);
  });
});
