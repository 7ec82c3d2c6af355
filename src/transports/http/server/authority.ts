/**
 * The authority a client names: a `Host` header value (RFC 9110 §7.2, `uri-host [ ":" port ]`)
 * or the host of an `Origin` (RFC 6454, `scheme "://" host [ ":" port ]`), parsed strictly and
 * normalised, and whether it names this machine's loopback interface.
 *
 * Why strict: the DNS-rebinding guard decides on these values, and every leniency is a way for a
 * name an attacker controls to pass for a loopback one (`127.0.0.1.rebind.evil.example` once did,
 * through a prefix test). So the text must first fit a small ASCII grammar: a name of letters,
 * digits, `-`, `_` and `.` (no empty label; one trailing dot allowed), or hex digits, `:` and `.`
 * inside IPv6 brackets; then an optional decimal port. Anything else (percent-encoding,
 * non-ASCII, userinfo, a path, spaces, a zone id) is refused before the WHATWG URL parser
 * normalises what remains: case, the numeric forms of IPv4 (`127.1`, `0x7f.0.0.1`), IPv6
 * compression, the trailing dot of an IPv4 literal. The URL parser alone would not do: it maps
 * `local%68ost` and full-width `ｌｏｃａｌｈｏｓｔ` to `localhost`, which no browser sends.
 *
 * The loopback set is exactly:
 * - the name `localhost` and every name under `.localhost` (RFC 6761 §6.3: reserved, resolved to
 *   loopback by browsers without asking DNS, and not registrable, so no attacker can point one
 *   at a page of theirs);
 * - 127.0.0.0/8, in any form the URL parser reads as IPv4;
 * - `::1`, and 127.0.0.0/8 mapped into IPv6 (`::ffff:127.0.0.1`).
 * A name with one trailing dot is the same name (`localhost.` is the fully qualified form).
 */
import { isIP } from 'node:net';

export interface Authority {
  /**
   * The host, normalised: lower case, without a trailing dot; IPv4 as a dotted quad; IPv6 in
   * brackets, compressed (`[::1]`, `[::ffff:7f00:1]`).
   */
  readonly host: string;
  readonly kind: 'name' | 'ipv4' | 'ipv6';
  /** The port as sent; undefined when there is none (or it is empty, as RFC 3986 allows). */
  readonly port: number | undefined;
}

const NAME_AUTHORITY = /^([A-Za-z0-9_.-]{1,254})(?::(\d{0,5}))?$/;
const IPV6_AUTHORITY = /^\[([0-9A-Fa-f:.]{2,45})\](?::(\d{0,5}))?$/;
const LABEL = /^[a-z0-9_-]{1,63}$/;

function portOf(text: string | undefined): number | undefined | null {
  if (text === undefined || text.length === 0) return undefined;
  const port = Number(text);
  return port <= 65_535 ? port : null;
}

/** What the URL parser makes of a host it accepts, or undefined. */
function urlHostname(host: string): string | undefined {
  try {
    return new URL(`http://${host}/`).hostname;
  } catch {
    return undefined;
  }
}

/**
 * Parses `host[:port]` (a `Host` header value, or the authority of an origin). Undefined when it
 * is not a well-formed authority by the grammar above.
 */
export function parseAuthority(text: string): Authority | undefined {
  const v6 = IPV6_AUTHORITY.exec(text);
  if (v6) {
    const port = portOf(v6[2]);
    if (port === null || isIP(v6[1]!) !== 6) return undefined;
    const host = urlHostname(`[${v6[1]!}]`);
    return host === undefined ? undefined : { host, kind: 'ipv6', port };
  }
  const named = NAME_AUTHORITY.exec(text);
  if (!named) return undefined;
  const port = portOf(named[2]);
  if (port === null) return undefined;
  const raw = named[1]!.toLowerCase();
  const name = raw.endsWith('.') ? raw.slice(0, -1) : raw;
  if (name.length === 0 || name.length > 253) return undefined;
  for (const label of name.split('.')) if (!LABEL.test(label)) return undefined;
  // The parser reads names whose last label is numeric as IPv4 (and refuses bad ones: `1.2.3.4.5`).
  const host = urlHostname(name);
  if (host === undefined) return undefined;
  if (isIP(host) === 4) return { host, kind: 'ipv4', port };
  // The parser leaves names as they are once they fit the grammar (lower case, no trailing dot).
  return host === name ? { host, kind: 'name', port } : undefined;
}

/** The eight 16-bit groups of a compressed IPv6 text as the URL parser writes it (hex, `::`). */
function hextets(address: string): number[] | undefined {
  const halves = address.split('::');
  if (halves.length > 2) return undefined;
  const parse = (part: string): number[] =>
    part.length === 0 ? [] : part.split(':').map((group) => Number.parseInt(group, 16));
  const head = parse(halves[0]!);
  const tail = halves.length === 2 ? parse(halves[1]!) : [];
  const zeros = 8 - head.length - tail.length;
  if (zeros < 0 || (halves.length === 1 && zeros !== 0)) return undefined;
  const groups = [...head, ...new Array<number>(zeros).fill(0), ...tail];
  return groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}

/** Whether a parsed authority names the loopback interface (the set in this module's comment). */
export function isLoopbackAuthority(authority: Authority): boolean {
  switch (authority.kind) {
    case 'name':
      return authority.host === 'localhost' || authority.host.endsWith('.localhost');
    case 'ipv4':
      return authority.host.startsWith('127.');
    case 'ipv6': {
      const g = hextets(authority.host.slice(1, -1));
      if (g === undefined || g.slice(0, 5).some((x) => x !== 0)) return false;
      if (g[5] === 0 && g[6] === 0 && g[7] === 1) return true;
      return g[5] === 0xffff && g[6]! >> 8 === 127;
    }
  }
}

/**
 * Whether a configured listen address (`server.host`: a name or an IP address, IPv6 without
 * brackets) is a loopback one, by the same rules as a `Host` header.
 */
export function isLoopbackAddress(host: string): boolean {
  const authority = parseAuthority(isIP(host) === 6 ? `[${host}]` : host);
  return authority !== undefined && isLoopbackAuthority(authority);
}

const ORIGIN = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(.*)$/s;

export interface ParsedOrigin {
  /** Lower case, without `:` (`http`, `https`, `chrome-extension`). */
  readonly scheme: string;
  readonly authority: Authority;
  /**
   * The origin as the configuration stores `server.allowedOrigins` entries (the URL parser's
   * serialisation: default port dropped), for an exact comparison.
   */
  readonly normalized: string;
}

/**
 * Parses an `Origin` header value: `scheme://authority` and nothing else (no path, no userinfo,
 * no query); the authority by {@link parseAuthority}. `null`, opaque and malformed origins give
 * undefined.
 */
export function parseOrigin(text: string): ParsedOrigin | undefined {
  const m = ORIGIN.exec(text);
  if (!m) return undefined;
  const authority = parseAuthority(m[2]!);
  if (authority === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  const normalized = url.origin !== 'null' ? url.origin : `${url.protocol}//${url.host}`;
  return { scheme: m[1]!.toLowerCase(), authority, normalized };
}
