import type { IncomingMessage } from 'node:http';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  checkHost,
  checkOrigin,
  HostOriginGuard,
  isJsonContentType,
  isLoopbackBind,
  listsMediaType,
} from './http-guards.js';
import { hostileHost, loopbackHost, port, withPort } from './test-support/host-arbitraries.js';

const loopback = { bindHost: '127.0.0.1', allowedHosts: [] as string[], allowedOrigins: [] as string[] };

describe('checkHost (DNS rebinding)', () => {
  it.each([
    'localhost',
    'localhost:8787',
    'localhost.:8787',
    '127.0.0.1:8787',
    '[::1]:8787',
    '[::1]',
    'LOCALHOST:1',
    'app.localhost:5173',
  ])('accepts %s on a loopback bind', (host) => {
    expect(checkHost(host, loopback)).toBeUndefined();
  });
  it.each([
    'evil.example',
    'evil.example:8787',
    'localhost.evil.example',
    '127.0.0.1.rebind.evil.example',
    '127.0.0.1.rebind.evil.example:8787',
    '127.0.0.1.nip.io',
    '10.0.0.1:8787',
    '',
  ])('refuses %j on a loopback bind', (host) => {
    expect(checkHost(host, loopback)).toBeDefined();
  });
  it('says why: missing, malformed or not allowed', () => {
    expect(checkHost(undefined, loopback)).toMatch(/missing/);
    expect(checkHost('local%68ost', loopback)).toMatch(/not a valid host/);
    expect(checkHost('evil.example', loopback)).toMatch(/not allowed/);
  });
  it('accepts configured extra hosts, with or without their port, normalised', () => {
    const rules = { ...loopback, allowedHosts: ['gw.internal', 'other.internal:8787', '[::1]:9'] };
    expect(checkHost('gw.internal:8787', rules)).toBeUndefined();
    expect(checkHost('GW.internal.', rules)).toBeUndefined();
    expect(checkHost('other.internal:8787', rules)).toBeUndefined();
    expect(checkHost('other.internal:8788', rules)).toBeDefined();
    expect(checkHost('gw.internal.evil.example', rules)).toBeDefined();
  });
  it('does not restrict Host on a public bind unless configured', () => {
    expect(checkHost('anything', { bindHost: '0.0.0.0', allowedHosts: [] })).toBeUndefined();
    expect(checkHost('anything', { bindHost: '0.0.0.0', allowedHosts: ['gw.example'] })).toBeDefined();
    expect(
      checkHost('gw.example:443', { bindHost: '0.0.0.0', allowedHosts: ['gw.example'] }),
    ).toBeUndefined();
    // Loopback names are loopback-bind defaults, not allowed hosts of a public bind.
    expect(checkHost('localhost', { bindHost: '0.0.0.0', allowedHosts: ['gw.example'] })).toBeDefined();
  });
  it('knows loopback binds by parsing, not by prefix', () => {
    expect(isLoopbackBind('127.0.0.1')).toBe(true);
    expect(isLoopbackBind('::1')).toBe(true);
    expect(isLoopbackBind('127.0.0.1.evil.example')).toBe(false);
  });
});

describe('checkOrigin', () => {
  it('accepts requests without Origin', () => {
    expect(checkOrigin(undefined, loopback)).toBeUndefined();
  });
  it.each([
    'http://localhost:3000',
    'http://127.0.0.1',
    'https://[::1]:8443',
    'http://app.localhost:5173',
    'HTTP://LOCALHOST',
  ])('accepts the loopback origin %s on a loopback bind', (origin) => {
    expect(checkOrigin(origin, loopback)).toBeUndefined();
  });
  it.each([
    'http://evil.example',
    'null',
    'file://',
    'http://localhost.evil.example',
    'http://127.0.0.1.rebind.evil.example',
    'http://127.0.0.1.rebind.evil.example:8787',
    'http://[::1].evil.example',
    'http://localhost@evil.example',
    'http://evil.example@localhost',
    'http://localhost/path',
    'ws://localhost',
    'chrome-extension://localhost',
  ])('refuses %s', (origin) => {
    expect(checkOrigin(origin, loopback)).toBeDefined();
  });
  it('accepts configured origins (compared normalised) and *', () => {
    const rules = { ...loopback, allowedOrigins: ['https://app.example'] };
    expect(checkOrigin('https://app.example', rules)).toBeUndefined();
    expect(checkOrigin('HTTPS://App.Example:443', rules)).toBeUndefined();
    expect(checkOrigin('https://app.example.evil', rules)).toBeDefined();
    expect(checkOrigin('https://x.example', { ...loopback, allowedOrigins: ['*'] })).toBeUndefined();
    expect(checkOrigin('http://localhost:3000', { bindHost: '0.0.0.0', allowedOrigins: [] })).toBeDefined();
  });
});

function request(headers: Record<string, string>, raw: string[] = []): IncomingMessage {
  const rawHeaders = raw.length > 0 ? raw : Object.entries(headers).flat();
  return { headers, rawHeaders } as unknown as IncomingMessage; // only the headers are read
}

describe('HostOriginGuard', () => {
  const guard = new HostOriginGuard(loopback);

  it('refuses a rebinding host and a rebinding origin, and serves loopback ones', () => {
    expect(guard.check(request({ host: '127.0.0.1.rebind.evil.example' }))?.reason).toBe('host');
    expect(
      guard.check(request({ host: 'localhost:1', origin: 'http://127.0.0.1.rebind.evil.example' }))?.reason,
    ).toBe('origin');
    expect(guard.check(request({ host: 'localhost:1', origin: 'http://localhost:1' }))).toBeUndefined();
  });

  it('refuses a request with two Host lines (Node keeps only the first)', () => {
    const req = request({ host: 'localhost' }, ['Host', 'localhost', 'host', 'evil.example']);
    expect(guard.check(req)).toEqual({ reason: 'host', message: 'more than one Host header' });
  });

  it('gives the same verdicts from its bounded memory as without it (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(hostileHost, loopbackHost, fc.string({ maxLength: 12 })), { maxLength: 200 }),
        (hosts) => {
          for (const host of hosts) {
            const expected = checkHost(host.length === 0 ? undefined : host, loopback);
            expect(guard.check(request({ host }))?.message).toBe(expected);
          }
        },
      ),
      { numRuns: 50 },
    );
  });
});

describe('generated hosts and origins on a loopback bind (property)', () => {
  it('refuses every hostile Host and every origin built on one', () => {
    fc.assert(
      fc.property(hostileHost, port, fc.constantFrom('http', 'https'), (host, p, scheme) => {
        const authority = withPort(host, p);
        expect(checkHost(authority, loopback), authority).toBeDefined();
        expect(checkOrigin(`${scheme}://${authority}`, loopback), authority).toBeDefined();
      }),
      { numRuns: 5000 },
    );
  });

  it('accepts every legitimate loopback Host and http(s) origin', () => {
    fc.assert(
      fc.property(loopbackHost, port, fc.constantFrom('http', 'https'), (host, p, scheme) => {
        const authority = withPort(host, p);
        expect(checkHost(authority, loopback), authority).toBeUndefined();
        expect(checkOrigin(`${scheme}://${authority}`, loopback), authority).toBeUndefined();
      }),
      { numRuns: 2000 },
    );
  });
});

describe('content negotiation', () => {
  it('requires a media type to be listed by name with q above 0', () => {
    expect(listsMediaType('application/json, text/event-stream', 'text/event-stream')).toBe(true);
    expect(listsMediaType('application/json;q=0.5, text/event-stream;q=0.1', 'application/json')).toBe(true);
    expect(listsMediaType('Application/JSON; charset=utf-8', 'application/json')).toBe(true);
    expect(listsMediaType('application/json', 'text/event-stream')).toBe(false);
    expect(listsMediaType('text/event-stream;q=0, application/json', 'text/event-stream')).toBe(false);
    expect(listsMediaType(undefined, 'application/json')).toBe(false);
    expect(listsMediaType('', 'application/json')).toBe(false);
  });
  it('does not take wildcards for a listing (the transport says the client lists both types)', () => {
    expect(listsMediaType('*/*', 'application/json')).toBe(false);
    expect(listsMediaType('text/*', 'text/event-stream')).toBe(false);
    expect(listsMediaType('application/*, text/*', 'application/json')).toBe(false);
  });
  it('recognises JSON content types', () => {
    expect(isJsonContentType('application/json')).toBe(true);
    expect(isJsonContentType('application/json; charset=utf-8')).toBe(true);
    expect(isJsonContentType('text/plain')).toBe(false);
    expect(isJsonContentType(undefined)).toBe(false);
  });
});
