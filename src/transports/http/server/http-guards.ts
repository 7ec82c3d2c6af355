/**
 * Checks every MCP HTTP request passes before anything else: DNS-rebinding protection (`Host` on
 * a loopback bind), `Origin`, and content negotiation. Pure functions of header values.
 */

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/** Whether the gateway is bound to a loopback address (the default). */
export function isLoopbackBind(host: string): boolean {
  return LOOPBACK_NAMES.has(host.toLowerCase()) || host.startsWith('127.');
}

/** `host[:port]` without the port, lower-cased; IPv6 keeps its brackets. */
export function hostName(hostHeader: string): string {
  const value = hostHeader.trim().toLowerCase();
  if (value.startsWith('[')) {
    const end = value.indexOf(']');
    return end > 0 ? value.slice(0, end + 1) : value;
  }
  const colon = value.lastIndexOf(':');
  return colon > 0 ? value.slice(0, colon) : value;
}

/** The configured hosts, lower-cased, as a set: built once per list (a config's lists never change). */
const HOST_SETS = new WeakMap<readonly string[], ReadonlySet<string>>();

function allowedHostSet(hosts: readonly string[]): ReadonlySet<string> {
  let set = HOST_SETS.get(hosts);
  if (set === undefined) {
    set = new Set(hosts.map((h) => h.toLowerCase()));
    HOST_SETS.set(hosts, set);
  }
  return set;
}

/**
 * DNS rebinding: a page on `evil.example` that resolves to 127.0.0.1 reaches a loopback server with
 * `Host: evil.example`. On a loopback bind only loopback names (and configured extras) are served.
 * On any other bind the Host is not restricted unless `allowedHosts` is set.
 */
export function checkHost(
  hostHeader: string | undefined,
  options: { bindHost: string; allowedHosts: readonly string[] },
): string | undefined {
  const allowed = allowedHostSet(options.allowedHosts);
  if (!isLoopbackBind(options.bindHost) && allowed.size === 0) return undefined;
  if (hostHeader === undefined || hostHeader.length === 0) return 'missing Host header';
  const name = hostName(hostHeader);
  if (allowed.has(hostHeader.trim().toLowerCase()) || allowed.has(name)) return undefined;
  if (isLoopbackBind(options.bindHost) && (LOOPBACK_NAMES.has(name) || name.startsWith('127.')))
    return undefined;
  return `Host ${JSON.stringify(hostHeader.slice(0, 100))} is not allowed`;
}

/**
 * `Origin` (sent by browsers): when present it must be a loopback origin on a loopback bind, or one
 * of `allowedOrigins` (exact `scheme://host[:port]`, or `*` to allow any). Absent is fine: non-browser
 * clients do not send it.
 */
export function checkOrigin(
  origin: string | undefined,
  options: { bindHost: string; allowedOrigins: readonly string[] },
): string | undefined {
  if (origin === undefined) return undefined;
  const allowed = options.allowedOrigins;
  if (allowed.includes('*') || allowed.includes(origin)) return undefined;
  if (isLoopbackBind(options.bindHost)) {
    try {
      const url = new URL(origin);
      const name = url.hostname.toLowerCase();
      if (
        (url.protocol === 'http:' || url.protocol === 'https:') &&
        (LOOPBACK_NAMES.has(name) || LOOPBACK_NAMES.has(`[${name}]`) || name.startsWith('127.'))
      ) {
        return undefined;
      }
    } catch {
      // Not a URL (e.g. "null"): not allowed.
    }
  }
  return `Origin ${JSON.stringify(origin.slice(0, 100))} is not allowed`;
}

interface MediaRange {
  readonly type: string;
  readonly q: number;
}

function mediaRanges(accept: string): MediaRange[] {
  return accept.split(',').map((part) => {
    const [type = '', ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const value = q ? Number(q.slice(2)) : 1;
    return { type: type.trim(), q: Number.isFinite(value) ? value : 1 };
  });
}

/**
 * Parsed `Accept` values by text: a client sends the same one with every request. Bounded, since
 * the text is the client's: past the bound it starts over.
 */
const RANGES = new Map<string, readonly MediaRange[]>();
const RANGES_KEPT = 64;

function rangesOf(accept: string): readonly MediaRange[] {
  let ranges = RANGES.get(accept);
  if (ranges === undefined) {
    ranges = mediaRanges(accept);
    if (RANGES.size >= RANGES_KEPT) RANGES.clear();
    RANGES.set(accept, ranges);
  }
  return ranges;
}

/** Whether `accept` admits `mediaType` (wildcards honoured, q=0 excluded). */
export function accepts(accept: string | undefined, mediaType: string): boolean {
  if (!accept) return false;
  const [major] = mediaType.split('/');
  return rangesOf(accept).some(
    (r) => r.q > 0 && (r.type === mediaType || r.type === '*/*' || r.type === `${major}/*`),
  );
}

/** `application/json`, with or without parameters (charset). */
export function isJsonContentType(contentType: string | undefined): boolean {
  if (!contentType) return false;
  if (contentType === 'application/json') return true;
  return contentType.split(';')[0]!.trim().toLowerCase() === 'application/json';
}
