/**
 * fast-check generators of `Host` values for the DNS-rebinding tests: every form in which a client
 * may legitimately name the loopback interface, and hosts a rebinding page (or a confused client)
 * may send, none of which names it. Shared by the unit tests of the parser and of the guards.
 */
import fc from 'fast-check';

// `xn--` starts an IDNA A-label, which is only a name when the rest is valid Punycode (`xn--a` is
// not, and the URL parser refuses it, rightly); the authority tests hold both cases by example.
const label = fc
  .stringMatching(/^[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?$/)
  .filter((text) => !text.startsWith('xn--'));
/** A DNS name an attacker can own: labels ending in an alphabetic top-level label. */
export const ownedName = fc
  .tuple(fc.array(label, { minLength: 0, maxLength: 3 }), fc.stringMatching(/^[a-z]{2,8}$/))
  .filter(([, tld]) => tld !== 'localhost')
  .map(([labels, tld]) => [...labels, tld].join('.'));
const octet = fc.integer({ min: 0, max: 255 });
export const port = fc.option(fc.integer({ min: 0, max: 65_535 }), { nil: undefined });
export const withPort = (host: string, p: number | undefined): string =>
  p === undefined ? host : `${host}:${p}`;
const randomCase = (text: string, flips: readonly boolean[]): string =>
  [...text].map((c, i) => (flips[i % Math.max(1, flips.length)] ? c.toUpperCase() : c)).join('');

/** `::1` or `::ffff:127.x.y.z` written in one of the many ways IPv6 allows. */
export const loopbackV6 = fc
  .record({
    mapped: fc.boolean(),
    b: octet,
    c: octet,
    d: octet,
    compress: fc.boolean(),
    pad: fc.boolean(),
    dotted: fc.boolean(),
    upper: fc.boolean(),
  })
  .map(({ mapped, b, c, d, compress, pad, dotted, upper }) => {
    const hex = (n: number) => (pad ? n.toString(16).padStart(4, '0') : n.toString(16));
    let text: string;
    if (!mapped) text = compress ? '::1' : [0, 0, 0, 0, 0, 0, 0, 1].map(hex).join(':');
    else {
      const tail = dotted ? `127.${b}.${c}.${d}` : `${hex((127 << 8) | b)}:${hex((c << 8) | d)}`;
      text = compress
        ? `::${hex(0xffff)}:${tail}`
        : `${[0, 0, 0, 0, 0].map(hex).join(':')}:${hex(0xffff)}:${tail}`;
    }
    return `[${upper ? text.toUpperCase() : text}]`;
  });

/** Every loopback host as a client may legitimately write it (without a port). */
export const loopbackHost = fc.oneof(
  fc
    .tuple(fc.array(fc.boolean(), { minLength: 1, maxLength: 9 }), fc.boolean())
    .map(([flips, dot]) => `${randomCase('localhost', flips)}${dot ? '.' : ''}`),
  fc
    .tuple(fc.array(label, { minLength: 1, maxLength: 3 }), fc.boolean())
    .map(([labels, dot]) => `${labels.join('.')}.localhost${dot ? '.' : ''}`),
  fc.tuple(octet, octet, octet, fc.boolean()).map(([b, c, d, dot]) => `127.${b}.${c}.${d}${dot ? '.' : ''}`),
  loopbackV6,
);

/** Hosts a rebinding page (or a confused client) may send, none of which is loopback. */
export const hostileHost = fc.oneof(
  // The reported bypass and its relatives: a loopback literal as the first labels of an owned name.
  fc.tuple(octet, octet, octet, ownedName).map(([b, c, d, name]) => `127.${b}.${c}.${d}.${name}`),
  fc.tuple(loopbackHost, ownedName).map(([host, name]) => `${host.replace(/\.$/, '')}.${name}`),
  fc
    .tuple(ownedName, fc.constantFrom('localhost', '127.0.0.1', '-localhost', 'localhost-'))
    .map(([name, tail]) => `${name}${tail}`),
  fc.tuple(loopbackV6, ownedName).map(([v6, name]) => `${v6}.${name}`),
  // Userinfo, paths, queries, fragments, spaces, backslashes around a loopback host.
  fc
    .tuple(loopbackHost, fc.constantFrom('@evil.example', '/x', '?x', '#x', ' ', '\\', '\t', ','))
    .map(([host, tail]) => `${host}${tail}`),
  fc.tuple(ownedName, loopbackHost).map(([name, host]) => `${name}@${host}`),
  // Percent-encoding of any one character of a loopback host.
  fc.tuple(loopbackHost, fc.nat()).map(([host, at]) => {
    const i = at % host.length;
    return `${host.slice(0, i)}%${host.charCodeAt(i).toString(16).padStart(2, '0')}${host.slice(i + 1)}`;
  }),
  // Unicode look-alikes: full-width forms (which IDNA maps back to ASCII) and Cyrillic letters.
  fc.tuple(loopbackHost, fc.nat()).map(([host, at]) => {
    const i = at % host.length;
    const c = host.charCodeAt(i);
    const wide = c >= 0x21 && c <= 0x7e ? String.fromCharCode(c + 0xfee0) : '\u3002';
    return `${host.slice(0, i)}${wide}${host.slice(i + 1)}`;
  }),
  fc.constantFrom('lоcalhost', 'localhоst', '１２７.0.0.1', '127。0。0。1'),
  // Plain other hosts and addresses.
  ownedName,
  fc
    .tuple(
      fc.integer({ min: 0, max: 255 }).filter((a) => a !== 127),
      octet,
      octet,
      octet,
    )
    .map((o) => o.join('.')),
  fc.constantFrom('[::]', '[::2]', '[fe80::1]', '[::ffff:10.0.0.1]', '[2001:db8::1]', '0.0.0.0'),
  // Anything else with a character outside the grammar.
  fc
    .tuple(fc.string({ maxLength: 20 }), fc.constantFrom('%', '@', '/', ' ', '\u0000', 'é', '\u200b', '*'))
    .map(([text, bad]) => `${text}${bad}${text}`),
);
