import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isLoopbackAddress, isLoopbackAuthority, parseAuthority, parseOrigin } from './authority.js';
import { hostileHost, loopbackHost, port, withPort } from './test-support/host-arbitraries.js';

function loopback(text: string): boolean {
  const authority = parseAuthority(text);
  return authority !== undefined && isLoopbackAuthority(authority);
}

describe('parseAuthority', () => {
  it.each([
    ['localhost', 'localhost', 'name', undefined],
    ['LocalHost:8787', 'localhost', 'name', 8787],
    ['localhost.', 'localhost', 'name', undefined],
    ['localhost:', 'localhost', 'name', undefined],
    ['127.0.0.1.', '127.0.0.1', 'ipv4', undefined],
    ['127.1:80', '127.0.0.1', 'ipv4', 80],
    ['0x7f.0.0.1', '127.0.0.1', 'ipv4', undefined],
    ['[0:0:0:0:0:0:0:1]:443', '[::1]', 'ipv6', 443],
    ['[::FFFF:127.0.0.1]', '[::ffff:7f00:1]', 'ipv6', undefined],
    ['gw.internal:8787', 'gw.internal', 'name', 8787],
    ['XN--BCHER-KVA.localhost', 'xn--bcher-kva.localhost', 'name', undefined],
  ])('reads %j as %s (%s), port %s', (text, host, kind, port) => {
    expect(parseAuthority(text)).toEqual({ host, kind, port });
  });

  it.each([
    '',
    ' localhost',
    'localhost ',
    '::1',
    '[::1].evil',
    '[::1]x',
    '[fe80::1%25eth0]',
    '[v1.x]',
    'user@localhost',
    'localhost/',
    'localhost?',
    'localhost#',
    'localhost:99999',
    'localhost:80:80',
    'localhost:-1',
    'local%68ost',
    'ｌｏｃａｌｈｏｓｔ',
    'lоcalhost', // a Cyrillic о
    '.localhost',
    'localhost..',
    'a..b',
    '127.0.0.256',
    '1.2.3.4.5',
    'evil.127.0.0.1',
    'xn--localhost',
    'xn--a.localhost', // not valid Punycode (it would decode to U+0080)
    `${'a'.repeat(64)}.example`,
    'localhost\u0000',
  ])('refuses %j', (text) => {
    expect(parseAuthority(text)).toBeUndefined();
  });
});

describe('the loopback set', () => {
  it.each([
    'localhost',
    'localhost.',
    'app.localhost:5173',
    'a.b.localhost.',
    'xn--bcher-kva.localhost',
    '127.0.0.1',
    '127.255.255.254:1',
    '127.1',
    '2130706433',
    '[::1]',
    '[0000:0000:0000:0000:0000:0000:0000:0001]',
    '[::ffff:127.0.0.1]',
    '[::ffff:7f00:1]:8787',
  ])('holds %j', (text) => {
    expect(loopback(text)).toBe(true);
  });

  it.each([
    '127.0.0.1.rebind.evil.example',
    '127.0.0.1.nip.io',
    'localhost.evil.example',
    'evil-localhost',
    'localhostx',
    'notlocalhost',
    '128.0.0.1',
    '0.0.0.0',
    '10.0.0.1:8787',
    '[::]',
    '[::2]',
    '[::127.0.0.1]',
    '[::ffff:10.0.0.1]',
    '[::ffff:0:127.0.0.1]',
    '[fe80::1]',
    'example.com',
  ])('does not hold %j', (text) => {
    expect(loopback(text)).toBe(false);
  });

  it('applies to listen addresses (IPv6 without brackets)', () => {
    for (const bind of ['127.0.0.1', '::1', 'localhost', '127.0.0.2', '::ffff:127.0.0.1'])
      expect(isLoopbackAddress(bind), bind).toBe(true);
    for (const bind of ['0.0.0.0', '::', '192.168.1.2', 'gw.example', '127.0.0.1.evil.example'])
      expect(isLoopbackAddress(bind), bind).toBe(false);
  });
});

describe('parseOrigin', () => {
  it('reads scheme://authority and normalises it as the configuration does', () => {
    expect(parseOrigin('HTTPS://App.Example.com:443')).toMatchObject({
      scheme: 'https',
      normalized: 'https://app.example.com',
    });
    expect(parseOrigin('http://[::1]:3000')?.authority).toEqual({ host: '[::1]', kind: 'ipv6', port: 3000 });
  });

  it.each([
    'null',
    'http://',
    'http://localhost/',
    'http://localhost/path',
    'http://user@localhost',
    'http://localhost?x',
    'http://local%68ost',
    'file://',
    'http:localhost',
    '//localhost',
    'http://localhost, http://evil.example',
  ])('refuses %j', (text) => {
    expect(parseOrigin(text)).toBeUndefined();
  });
});

describe('generated hosts (property)', () => {
  it('every legitimate loopback form, with any port, is loopback', () => {
    fc.assert(
      fc.property(loopbackHost, port, (host, p) => {
        expect(loopback(withPort(host, p)), withPort(host, p)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('no hostile host, with any port, is loopback', () => {
    fc.assert(
      fc.property(hostileHost, port, (host, p) => {
        expect(loopback(withPort(host, p)), withPort(host, p)).toBe(false);
      }),
      { numRuns: 5000 },
    );
  });

  it('never throws, and whatever parses is normalised to a fixed point', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), hostileHost, loopbackHost),
        (text) => {
          const authority = parseAuthority(text);
          if (authority === undefined) return;
          const again = parseAuthority(withPort(authority.host, authority.port));
          expect(again).toEqual(authority);
        },
      ),
      { numRuns: 3000 },
    );
  });
});
