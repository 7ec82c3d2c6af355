import { describe, expect, it } from 'vitest';
import { accepts, checkHost, checkOrigin, hostName, isJsonContentType } from './http-guards.js';

const loopback = { bindHost: '127.0.0.1', allowedHosts: [] as string[], allowedOrigins: [] as string[] };

describe('checkHost (DNS rebinding)', () => {
  it.each(['localhost', 'localhost:8787', '127.0.0.1:8787', '[::1]:8787', '[::1]', 'LOCALHOST:1'])(
    'accepts %s on a loopback bind',
    (host) => {
      expect(checkHost(host, loopback)).toBeUndefined();
    },
  );
  it.each(['evil.example', 'evil.example:8787', 'localhost.evil.example', '10.0.0.1:8787', ''])(
    'refuses %j on a loopback bind',
    (host) => {
      expect(checkHost(host, loopback)).toBeDefined();
    },
  );
  it('refuses a missing Host on a loopback bind', () => {
    expect(checkHost(undefined, loopback)).toMatch(/missing/);
  });
  it('accepts configured extra hosts', () => {
    expect(checkHost('gw.internal:8787', { ...loopback, allowedHosts: ['gw.internal'] })).toBeUndefined();
  });
  it('does not restrict Host on a public bind unless configured', () => {
    expect(checkHost('anything', { bindHost: '0.0.0.0', allowedHosts: [] })).toBeUndefined();
    expect(checkHost('anything', { bindHost: '0.0.0.0', allowedHosts: ['gw.example'] })).toBeDefined();
  });
  it('parses host names', () => {
    expect(hostName('[::1]:80')).toBe('[::1]');
    expect(hostName('Example.COM:80')).toBe('example.com');
  });
});

describe('checkOrigin', () => {
  it('accepts requests without Origin', () => {
    expect(checkOrigin(undefined, loopback)).toBeUndefined();
  });
  it.each(['http://localhost:3000', 'http://127.0.0.1', 'https://[::1]:8443'])(
    'accepts the loopback origin %s on a loopback bind',
    (origin) => {
      expect(checkOrigin(origin, loopback)).toBeUndefined();
    },
  );
  it.each(['http://evil.example', 'null', 'file://', 'http://localhost.evil.example'])(
    'refuses %s',
    (origin) => {
      expect(checkOrigin(origin, loopback)).toBeDefined();
    },
  );
  it('accepts configured origins and *', () => {
    expect(
      checkOrigin('https://app.example', { ...loopback, allowedOrigins: ['https://app.example'] }),
    ).toBeUndefined();
    expect(checkOrigin('https://x.example', { ...loopback, allowedOrigins: ['*'] })).toBeUndefined();
    expect(checkOrigin('http://localhost:3000', { bindHost: '0.0.0.0', allowedOrigins: [] })).toBeDefined();
  });
});

describe('content negotiation', () => {
  it('matches media types with wildcards and q values', () => {
    expect(accepts('application/json, text/event-stream', 'text/event-stream')).toBe(true);
    expect(accepts('*/*', 'application/json')).toBe(true);
    expect(accepts('text/*', 'text/event-stream')).toBe(true);
    expect(accepts('application/json', 'text/event-stream')).toBe(false);
    expect(accepts('text/event-stream;q=0, application/json', 'text/event-stream')).toBe(false);
    expect(accepts(undefined, 'application/json')).toBe(false);
  });
  it('recognises JSON content types', () => {
    expect(isJsonContentType('application/json')).toBe(true);
    expect(isJsonContentType('application/json; charset=utf-8')).toBe(true);
    expect(isJsonContentType('text/plain')).toBe(false);
    expect(isJsonContentType(undefined)).toBe(false);
  });
});
